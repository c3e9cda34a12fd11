# The commands a newcomer types. CMake does the building; this file runs the
# bootstrap first and picks the build folders.
BUILD ?= build
BUILD_SANITIZE ?= build-sanitize
BUILD_TSAN ?= build-tsan
WERROR ?= ON
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all bootstrap build build-sanitize build-tsan clients demo bench soak test test-plain \
        test-sanitize test-tsan clean \
        install uninstall deb

all: build

bootstrap:
	@sh scripts/bootstrap

build: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DWHARF_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

build-sanitize: bootstrap
	@cmake -S . -B $(BUILD_SANITIZE) -DCMAKE_BUILD_TYPE=Debug \
	    -DWHARF_WERROR=$(WERROR) -DWHARF_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD_SANITIZE) -j $(JOBS) -- --no-print-directory

# What has threads, under ThreadSanitizer: wharfd (the lease keeper's),
# and wharf run with the plugins its --threads runs. Criterion cannot run
# under TSan (its arena), so the tests are the plain build's, pointed at
# these binaries.
TSAN_TARGETS = wharfd wharf echo chaos coprocess fixture_meet fixture_abi2 fixture_good
build-tsan: bootstrap
	@cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug \
	    -DWHARF_WERROR=$(WERROR) -DWHARF_TSAN=ON -DWHARF_HARDEN=OFF \
	    $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TARGETS) \
	    -- --no-print-directory

# What the Python and Node clients need beyond bootstrap's packages: the
# Node client's dependencies, exactly as its package-lock.json pins them.
clients: bootstrap
	@if [ ! -f clients/node/node_modules/.package-lock.json ] || \
	    [ clients/node/package-lock.json -nt clients/node/node_modules/.package-lock.json ]; then \
	    cd clients/node && npm ci --no-audit --no-fund --silent; fi

# A private redis-server, wharfd and a few thousand tasks; see scripts/demo.
demo: build
	@BUILD=$(BUILD) bash scripts/demo

# Throughput, Redis cost, latency and memory against a private
# redis-server, beside redis-benchmark; see bench/run.sh and docs/tuning.md.
bench: build clients
	@BUILD=$(BUILD) bash bench/run.sh

# Chaos tasks through kills, reloads and a Redis restart; counts what was
# lost or run twice (bench/soak.sh says what it checks).
soak: build
	@BUILD=$(BUILD) bash bench/soak.sh

# The whole suite, then the whole suite again under ASan + UBSan, then the
# tests of wharfd's threads against a ThreadSanitizer wharfd. Every part
# always runs, even when one before it fails (a failure in one says
# little about the others), each ends with a summary line, and make test
# fails if any did.
test:
	@rm -f $(BUILD)/test-plain.log $(BUILD_SANITIZE)/test-sanitize.log \
	    $(BUILD)/test-tsan.log; \
	plain=0; sanitize=0; tsan=0; \
	$(MAKE) --no-print-directory test-plain || plain=$$?; \
	$(MAKE) --no-print-directory test-sanitize || sanitize=$$?; \
	$(MAKE) --no-print-directory test-tsan || tsan=$$?; \
	echo; \
	sh scripts/test-summary plain $$plain $(BUILD)/test-plain.log; \
	sh scripts/test-summary sanitize $$sanitize \
	    $(BUILD_SANITIZE)/test-sanitize.log; \
	sh scripts/test-summary tsan $$tsan $(BUILD)/test-tsan.log; \
	test $$plain -eq 0 && test $$sanitize -eq 0 && test $$tsan -eq 0

test-plain: build clients
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) \
	    --output-log $(abspath $(BUILD))/test-plain.log

# The tests that run wharfd's lease keeper hard (leases, deadlines,
# reloads, crashes), its workers' threads (test_threads, test_coprocess)
# and a workflow's child read by a worker with threads (test_workflow)
# against the ThreadSanitizer wharfd, and those of wharf run --threads
# against its wharf and plugins; any report fails.
TSAN_REPORTS = $(abspath $(BUILD_TSAN))/tsan-reports
TSAN_TESTS = test_lease|test_supervisor|test_wharf_run|test_threads|test_coprocess|test_workflow
# A worker with threads is forked by a supervisor that runs the lease
# keeper's threads, and starts threads of its own: TSan allows that with
# die_after_fork=0, and says once in such a worker that a new thread has
# the id the parent's keeper thread had (its registry is the parent's
# copy). A note, not a race: a report of nothing but that line is dropped.
DUP_THREAD = ^==[0-9]*==ThreadSanitizer: dup thread with used id 0x[0-9a-f]*$$
test-tsan: build build-tsan
	@rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	@WHARF_TEST_WHARFD=$(abspath $(BUILD_TSAN))/wharfd \
	    WHARF_TEST_BUILD=$(abspath $(BUILD_TSAN)) \
	    TSAN_OPTIONS=die_after_fork=0:log_path=$(TSAN_REPORTS)/tsan \
	    ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) \
	    -R '^($(TSAN_TESTS))$$' \
	    --output-log $(abspath $(BUILD))/test-tsan.log; \
	    status=$$?; \
	    for f in $(TSAN_REPORTS)/*; do \
	        [ -f "$$f" ] && ! grep -qv "$(DUP_THREAD)" "$$f" && rm -f "$$f"; \
	    done; \
	    if [ -n "$$(ls -A $(TSAN_REPORTS))" ]; then \
	        cat $(TSAN_REPORTS)/*; \
	        echo "sanitizer reports above: $(TSAN_REPORTS)" >&2; \
	        echo "sanitizer reports: $(TSAN_REPORTS)" \
	            >> $(abspath $(BUILD))/test-tsan.log; \
	        exit 1; \
	    fi; exit $$status

# Criterion passes a test even when LeakSanitizer reports at its exit, so
# every sanitizer report goes to a file and any report fails the run.
REPORTS = $(abspath $(BUILD_SANITIZE))/sanitizer-reports
# A worker is forked by a supervisor that runs the lease keeper's threads,
# so LeakSanitizer in the worker lists those threads (its child does not
# have them) with this line: a note, not a leak. wharfd forks only while
# those threads are between passes (host/lease.c), so they hold nothing
# the child would lose. A report of nothing but such lines is dropped.
UNSUSPENDED = ^==[0-9]*==Running thread [0-9]* was not suspended. False leaks are possible.$$
test-sanitize: build-sanitize clients
	@rm -rf $(REPORTS) && mkdir -p $(REPORTS)
	@ASAN_OPTIONS=detect_leaks=1:allow_user_segv_handler=1:log_path=$(REPORTS)/asan \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(REPORTS)/ubsan \
	    ctest --test-dir $(BUILD_SANITIZE) --output-on-failure -j $(JOBS) \
	    --output-log $(abspath $(BUILD_SANITIZE))/test-sanitize.log; \
	    status=$$?; \
	    for f in $(REPORTS)/*; do \
	        [ -f "$$f" ] && ! grep -qv "$(UNSUSPENDED)" "$$f" && rm -f "$$f"; \
	    done; \
	    if [ -n "$$(ls -A $(REPORTS))" ]; then \
	        cat $(REPORTS)/*; \
	        echo "sanitizer reports above: $(REPORTS)" >&2; \
	        echo "sanitizer reports: $(REPORTS)" \
	            >> $(abspath $(BUILD_SANITIZE))/test-sanitize.log; \
	        exit 1; \
	    fi; exit $$status

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: GNU install dirs
# under PREFIX (with PREFIX=/usr the manifest goes to /etc/wharf); an
# existing wharf.ini is never overwritten. What was installed is listed in
# $(BUILD)/install_manifest.txt, which `make uninstall` reads.
PREFIX ?= /usr/local
DESTDIR ?=
install: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DWHARF_WERROR=$(WERROR) -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	    $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD)
	@# Into this very system as root: refresh the loader's cache, so
	@# programs linked with libwharf-client.so find it at once.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && \
	    command -v ldconfig >/dev/null 2>&1; then ldconfig; fi

# Removes the files of the last install (under the same DESTDIR: the list
# holds the paths without it), then wharf's own folders if they are empty.
# A wharf.ini that differs from the one installed (an operator edited it)
# is kept, and said so.
uninstall:
	@test -f $(BUILD)/install_manifest.txt || \
	    { echo "uninstall: no $(BUILD)/install_manifest.txt: nothing was installed from $(BUILD)" >&2; exit 1; }
	@while IFS= read -r f || [ -n "$$f" ]; do \
	    f="$(DESTDIR)$$f"; \
	    case "$$f" in \
	    */wharf/wharf.ini) \
	        if [ -f "$$f" ] && ! cmp -s "$$f" $(BUILD)/wharf-install-stage/wharf.ini; then \
	            echo "uninstall: keeping $$f (changed since it was installed)"; continue; \
	        fi ;; \
	    esac; \
	    rm -f "$$f"; \
	done < $(BUILD)/install_manifest.txt
	@for d in $$(sed -n 's#^\(.*/\(include/wharf\|cmake/wharf\|lib/wharf/plugins\|share/wharf\|doc/wharf\|etc/wharf\)\)/.*#\1#p' \
	        $(BUILD)/install_manifest.txt | sort -ru); do \
	    rmdir "$(DESTDIR)$$d" 2>/dev/null || true; \
	done
	@for d in $$(sed -n 's#^\(.*/lib/wharf\)/plugins/.*#\1#p' $(BUILD)/install_manifest.txt | sort -u); do \
	    rmdir "$(DESTDIR)$$d" 2>/dev/null || true; \
	done
	@echo "uninstall: removed the files listed in $(BUILD)/install_manifest.txt"

# make deb: $(BUILD_DEB)/wharf_VERSION_ARCH.deb (CPack, see
# cmake/package.cmake), from a build of its own configured for /usr (so
# the libraries go to the multiarch folder whatever `make install` was
# last given), then lintian on it: any error or warning fails.
BUILD_DEB ?= build-deb
deb: bootstrap
	@cmake -S . -B $(BUILD_DEB) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_INSTALL_PREFIX=/usr -DWHARF_TESTS=OFF \
	    -DWHARF_WERROR=$(WERROR) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD_DEB) -j $(JOBS) -- --no-print-directory
	@rm -f $(BUILD_DEB)/wharf_*.deb
	@cd $(BUILD_DEB) && cpack -G DEB >cpack.log 2>&1 || \
	    { cat cpack.log; echo "deb: cpack failed" >&2; exit 1; }
	@ls $(BUILD_DEB)/wharf_*.deb
	@lintian --fail-on error,warning $(BUILD_DEB)/wharf_*.deb \
	    2>$(BUILD_DEB)/lintian.stderr; status=$$?; \
	    grep -v '^running with root privileges' $(BUILD_DEB)/lintian.stderr >&2; \
	    exit $$status

clean:
	rm -rf $(BUILD) $(BUILD_SANITIZE) $(BUILD_TSAN) $(BUILD_DEB)
