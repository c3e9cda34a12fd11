# The commands a newcomer types. CMake does the building; this file runs the
# bootstrap first and picks the build folders.
BUILD ?= build
BUILD_SANITIZE ?= build-sanitize
WERROR ?= ON
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all bootstrap build build-sanitize demo bench test test-plain test-sanitize clean

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

# A private redis-server, wharfd and a few thousand tasks; see scripts/demo.
demo: build
	@BUILD=$(BUILD) bash scripts/demo

# Throughput, Redis cost, latency and memory against a private
# redis-server, beside redis-benchmark; see bench/run.sh and docs/tuning.md.
bench: build
	@BUILD=$(BUILD) bash bench/run.sh

# The whole suite, then the whole suite again under ASan + UBSan. Both
# halves always run, even when the first fails (a failure in one says
# little about the other), each ends with a summary line, and make test
# fails if either did.
test:
	@rm -f $(BUILD)/test-plain.log $(BUILD_SANITIZE)/test-sanitize.log; \
	plain=0; sanitize=0; \
	$(MAKE) --no-print-directory test-plain || plain=$$?; \
	$(MAKE) --no-print-directory test-sanitize || sanitize=$$?; \
	echo; \
	sh scripts/test-summary plain $$plain $(BUILD)/test-plain.log; \
	sh scripts/test-summary sanitize $$sanitize \
	    $(BUILD_SANITIZE)/test-sanitize.log; \
	test $$plain -eq 0 && test $$sanitize -eq 0

test-plain: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) \
	    --output-log $(abspath $(BUILD))/test-plain.log

# Criterion passes a test even when LeakSanitizer reports at its exit, so
# every sanitizer report goes to a file and any report fails the run.
REPORTS = $(abspath $(BUILD_SANITIZE))/sanitizer-reports
test-sanitize: build-sanitize
	@rm -rf $(REPORTS) && mkdir -p $(REPORTS)
	@ASAN_OPTIONS=detect_leaks=1:log_path=$(REPORTS)/asan \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(REPORTS)/ubsan \
	    ctest --test-dir $(BUILD_SANITIZE) --output-on-failure -j $(JOBS) \
	    --output-log $(abspath $(BUILD_SANITIZE))/test-sanitize.log; \
	    status=$$?; \
	    if [ -n "$$(ls -A $(REPORTS))" ]; then \
	        cat $(REPORTS)/*; \
	        echo "sanitizer reports above: $(REPORTS)" >&2; \
	        echo "sanitizer reports: $(REPORTS)" \
	            >> $(abspath $(BUILD_SANITIZE))/test-sanitize.log; \
	        exit 1; \
	    fi; exit $$status

clean:
	rm -rf $(BUILD) $(BUILD_SANITIZE)
