/* The wharf console page: polls the JSON API (docs/console.md) and
 * renders it. Every piece of data is set with textContent or as an
 * attribute value, never parsed as HTML, so a payload or error holding
 * markup shows as text. */
'use strict';

const POLL_MS = 1000;
const DEAD_POLL_MS = 3000;
const DEAD_PAGE = 50;

const state = {
  overview: null,
  deadType: '',
  deadOffset: 0,
  deadSeen: -1,     /* the dead count the list was read at */
  deadReadAt: 0,
  detail: null,     /* {type, id} shown in the detail panel */
  wanted: null,     /* {type, id} last asked for */
  again: 0,         /* the timer that asks for it again, if busy */
};

function $(id) { return document.getElementById(id); }

/* An element with text and attributes; children appended as given. */
function el(tag, text, attrs, children) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children || []) e.appendChild(c);
  return e;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

function ms(v) {
  if (v === undefined || v === null || v < 0) return '-';
  if (v < 1) return v.toFixed(2) + ' ms';
  if (v < 1000) return v.toFixed(0) + ' ms';
  return (v / 1000).toFixed(1) + ' s';
}

function duration(v) {
  if (!v && v !== 0) return '-';
  const s = Math.floor(v / 1000);
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + (s % 60) + 's';
  return Math.floor(s / 3600) + 'h' + Math.floor((s % 3600) / 60) + 'm';
}

function when(msEpoch) {
  if (!msEpoch) return '-';
  return new Date(Number(msEpoch)).toISOString().replace('T', ' ').replace('Z', ' UTC');
}

async function api(path, options) {
  const r = await fetch(path, Object.assign({ cache: 'no-store' }, options || {}));
  let body = null;
  try { body = await r.json(); } catch (e) { body = { error: 'not JSON: ' + r.status }; }
  return { status: r.status, body: body, retryAfter: Number(r.headers.get('Retry-After')) || 0 };
}

/* A small chart: one bar per step, ok (green) under retry (amber) under
 * dead (red), scaled to the busiest step, which the label under it
 * names. */
function chart(series) {
  const ns = 'http://www.w3.org/2000/svg';
  const kinds = ['ok', 'retry', 'dead'];
  const steps = series ? (series.ok || []).length : 0;
  const bar = 3, h = 30, w = Math.max(1, steps) * bar;
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'chart');
  svg.setAttribute('width', w);
  svg.setAttribute('height', h);
  svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
  const wrap = el('div', null, { class: 'chart-box' }, [svg]);
  const base = document.createElementNS(ns, 'line');
  base.setAttribute('class', 'base');
  base.setAttribute('x1', 0);
  base.setAttribute('x2', w);
  base.setAttribute('y1', h - 0.5);
  base.setAttribute('y2', h - 0.5);
  svg.appendChild(base);
  if (!steps) return wrap;
  let peak = 0;
  for (let i = 0; i < steps; i++)
    peak = Math.max(peak, kinds.reduce((a, k) => a + ((series[k] || [])[i] || 0), 0));
  for (let i = 0; i < steps && peak > 0; i++) {
    let y = h;
    for (const k of kinds) {
      const v = (series[k] || [])[i] || 0;
      if (!v) continue;
      /* at least a pixel, so one dead task among thousands shows */
      const bh = Math.max(1, Math.round(v * (h - 1) / peak));
      y -= bh;
      const r = document.createElementNS(ns, 'rect');
      r.setAttribute('class', k);
      r.setAttribute('x', i * bar);
      r.setAttribute('y', y);
      r.setAttribute('width', bar - 1);
      r.setAttribute('height', bh);
      svg.appendChild(r);
    }
  }
  const title = document.createElementNS(ns, 'title');
  const sum = k => (series[k] || []).reduce((a, b) => a + b, 0);
  title.textContent = 'last ' + Math.round(steps * series.step_s / 60) + ' min, per ' +
    series.step_s + ' s: ok ' + sum('ok') + ', retry ' + sum('retry') + ', dead ' + sum('dead');
  svg.appendChild(title);
  wrap.appendChild(el('div', peak ? 'peak ' + peak + ' / ' + series.step_s + ' s' : 'idle',
    { class: 'chart-label' }));
  return wrap;
}

function pct(h) {
  if (!h || !h.count) return '-';
  const one = v => (v >= h.top_ms ? '> ' : '') + ms(v);
  return one(h.p50) + ' / ' + one(h.p99);
}

function renderTypes(o) {
  const body = $('types').tBodies[0];
  clear(body);
  $('types-empty').hidden = o.types.length > 0;
  for (const t of o.types) {
    const pm = t.last_minute || {};
    const cell = (field, v, cls) => el('td', v, Object.assign({ 'data-field': field }, cls ? { class: cls } : {}));
    const row = el('tr', null, { 'data-type': t.type }, [
      el('td', t.type, { class: 'type' }),
      cell('ready', t.ready),
      cell('running', t.running),
      cell('delayed', t.delayed),
      cell('dead', t.dead, t.dead > 0 ? 'nonzero-dead' : ''),
      cell('pressure', t.pressure ? 'on' : 'off', t.pressure ? 'pressure-on' : ''),
      pausedCell(o, t),
      el('td', (t.hosts || []).join(', ') || '-', { 'data-field': 'hosts' }),
      cell('ok_last_min', pm.ok !== undefined ? pm.ok : '-'),
      cell('retry_last_min', pm.retry !== undefined ? pm.retry : '-'),
      cell('dead_last_min', pm.dead !== undefined ? pm.dead : '-'),
      el('td', null, { 'data-field': 'chart' }, [chart(t.series)]),
      cell('wait', pct(t.wait_ms)),
      cell('run', pct(t.run_ms)),
    ]);
    // rates: a type with a rate_limit or a limit_key shows it after its
    // name, and how many waited for their rate turn here in the title.
    if (t.rate_limit || t.limit_key) {
      const parts = [t.rate_limit ? t.rate_limit + ', burst ' + t.rate_burst : 'no rate'];
      if (t.limit_key) parts.push('per ' + t.limit_key);
      row.firstChild.appendChild(el('span', ' (' + parts.join(', ') + ')', {
        class: 'rate', 'data-field': 'rate',
        title: t.rate_waits + ' waited for their rate turn on this host',
      }));
    }
    body.appendChild(row);
  }
}

/* The paused cell: no / yes / yes, 42s, and with actions on a button
 * that pauses or resumes the type on every host. */
function pausedCell(o, t) {
  const text = !t.paused ? 'no'
    : t.paused_left_ms !== undefined ? 'yes, ' + duration(t.paused_left_ms) : 'yes';
  const td = el('td', text + ' ', Object.assign({ 'data-field': 'paused' },
                                                t.paused ? { class: 'paused-on' } : {}));
  if (o.actions) {
    const action = t.paused ? 'resume' : 'pause';
    const b = el('button', action, { 'data-type-action': action });
    b.addEventListener('click', () => typeAct(action, t.type));
    td.appendChild(b);
  }
  return td;
}

/* POST api/pause or api/resume of type, behind the actions token. */
async function typeAct(action, type) {
  let token = $('token').value || sessionStorage.getItem('wharf-console-token') || '';
  if (!token) token = prompt('[console] token') || '';
  if (!token) return;
  if (!confirm(action + ' ' + type + ' on every host?')) return;
  sessionStorage.setItem('wharf-console-token', token);
  $('token').value = token;
  let r;
  try {
    r = await api('api/' + action + '?' + new URLSearchParams({ type: type }), {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + token },
    });
  } catch (e) {
    say(action + ' ' + type + ': the console did not answer; try again', true);
    return;
  }
  say(r.status === 200 ? action + ' ' + type + ': done'
                       : action + ' ' + type + ': ' + (r.body.error || r.status),
      r.status !== 200);
}

// The tasks a worker runs: the longest-running one, and how many more
// (a worker with threads runs several at once; every one is in the
// title).
function runningText(s) {
  if (!s.task) return '-';
  const more = (s.in_flight || 1) - 1;
  return s.type + ' ' + s.task + (more > 0 ? ' (+' + more + ' more)' : '');
}

function renderSlots(o) {
  const body = $('slots').tBodies[0];
  clear(body);
  for (const s of o.slots) {
    const last = s.last_restart
      ? s.last_restart.reason + ' (' + s.last_restart.how + ') at ' + when(s.last_restart.at_ms)
      : '-';
    body.appendChild(el('tr', null, { 'data-slot': s.slot }, [
      el('td', s.worker),
      el('td', s.pid || '-'),
      el('td', s.state + (s.restart_in_ms ? ' (restart in ' + duration(s.restart_in_ms) + ')' : '')),
      el('td', runningText(s), {
        class: 'mono',
        title: (s.running || []).map((r) => r.type + ' ' + r.task).join('\n'),
      }),
      el('td', s.task ? duration(s.running_ms) : '-'),
      el('td', s.pid ? duration(s.up_ms) : '-'),
      el('td', s.restarts),
      el('td', last),
    ]));
  }
  const r = o.restarts || {};
  $('restarts').textContent = 'restarts on this host: ' +
    Object.entries(r).map(([k, v]) => k + ' ' + v).join(', ');
}

function renderHosts(o) {
  const body = $('hosts').tBodies[0];
  clear(body);
  for (const h of o.hosts || []) {
    body.appendChild(el('tr', null, {}, [
      el('td', h.name, { class: 'mono' }),
      el('td', (h.types || '').split(',').join(', ')),
      el('td', h.workers || '-'),
      el('td', h.busy || '0'),
      el('td', when(h.started_at)),
      el('td', h.version || '-'),
    ]));
  }
}

/* Keeps a <select>'s options equal to the types, keeping the choice. */
function syncTypeSelect(select, types, keepFirst) {
  const want = (keepFirst ? [''] : []).concat(types);
  const have = Array.from(select.options).map(o => o.value);
  if (want.join('\n') === have.join('\n')) return;
  const chosen = select.value;
  while (select.options.length > (keepFirst ? 1 : 0)) select.remove(select.options.length - 1);
  for (const t of types) select.appendChild(el('option', t, { value: t }));
  if (want.includes(chosen)) select.value = chosen;
}

function renderOverview(o) {
  state.overview = o;
  $('host').textContent = o.host + ' · wharf ' + o.version;
  $('redis').textContent = o.redis_up ? 'redis up' : 'redis down';
  $('redis').className = 'badge' + (o.redis_up ? '' : ' down');
  const w = o.workers;
  $('workers').textContent = 'workers: ' + w.running + ' running, ' + w.idle + ' idle, ' +
    w.stopping + ' stopping, ' + w.down + ' down';
  $('updated').textContent = 'updated ' + when(o.time_ms);
  renderTypes(o);
  renderSlots(o);
  renderHosts(o);
  $('actions').hidden = !o.actions || !state.detail;
  $('read-only').hidden = !!o.actions || !state.detail;
  const names = o.types.map(t => t.type);
  syncTypeSelect($('find-type'), names, true);
  syncTypeSelect($('dead-type'), names, false);
  if (Date.now() - fleet.readAt > HISTORY_POLL_MS) loadHistory();
  if (!state.deadType && names.length) {
    const withDead = o.types.find(t => t.dead > 0);
    state.deadType = withDead ? withDead.type : names[0];
  }
  $('dead-type').value = state.deadType;
  if (state.searchOnLoad && state.deadType) {
    state.searchOnLoad = false;
    searchStart();
  }
  $('bulk').hidden = !search.on || !o.actions;
  const t = o.types.find(x => x.type === state.deadType);
  if (t && (t.dead !== state.deadSeen || Date.now() - state.deadReadAt > DEAD_POLL_MS)) {
    state.deadSeen = t.dead;
    loadDead();
  }
}

async function loadDead() {
  if (!state.deadType) return;
  if (search.on) return; /* the search's matches stay until cleared */
  state.deadReadAt = Date.now();
  const q = new URLSearchParams({ type: state.deadType, offset: state.deadOffset, limit: DEAD_PAGE });
  const r = await api('api/dead?' + q);
  const body = $('dead').tBodies[0];
  if (r.status !== 200) {
    $('dead-range').textContent = r.body.error || ('error ' + r.status);
    return;
  }
  clear(body);
  for (const it of r.body.items) {
    const open = el('button', it.id, { class: 'link', type: 'button' });
    open.addEventListener('click', () => showTask(r.body.type, it.id));
    body.appendChild(el('tr', null, { 'data-id': it.id }, [
      el('td', null, {}, [open]),
      el('td', when(it.died_at)),
      el('td', it.attempt !== undefined ? it.attempt : '-'),
      el('td', it.error !== undefined ? it.error : '-', { class: 'error' }),
    ]));
  }
  const n = r.body.items.length;
  $('dead-range').textContent = r.body.total === 0 ? 'empty'
    : (r.body.offset + 1) + '–' + (r.body.offset + n) + ' of ' + r.body.total + ', newest first';
  $('dead-prev').disabled = r.body.offset === 0;
  $('dead-next').disabled = r.body.offset + n >= r.body.total;
}

/* ---- dead set search and bulk actions (api/dead/search, api/dead/replay
 * and api/dead/purge): the CLI's filters, walked by the console a few
 * pages of 200 ids a request, the page asking again with the cursor ---- */

/* current: the cursor of the page shown (null: the newest); prev: those
 * of the pages before it; next: the one after it. */
const search = { on: false, q: null, gen: 0, current: null, next: null, prev: [], count: null };

/* The filter of the form, or null when it has none. */
function searchQuery() {
  const q = new URLSearchParams({ type: state.deadType });
  const fields = { grep: 'search-grep', since: 'search-since', before: 'search-before',
                   attempts: 'search-attempts', id_prefix: 'search-prefix' };
  let any = false;
  for (const [k, id] of Object.entries(fields)) {
    const v = $(id).value.trim();
    if (v) { q.set(k, v); any = true; }
  }
  return any ? q : null;
}

function searchText() {
  const parts = [];
  for (const [k, v] of search.q.entries()) if (k !== 'type') parts.push(k + ' ' + v);
  return parts.join(', ');
}

/* One page of matches from cursor (null: the newest). */
async function searchPage(cursor) {
  const gen = search.gen;
  const q = new URLSearchParams(search.q);
  q.set('list', DEAD_PAGE);
  if (cursor) q.set('cursor', cursor);
  const r = await api('api/dead/search?' + q);
  if (gen !== search.gen) return;
  if (r.status !== 200) {
    $('dead-range').textContent = r.body.error || ('error ' + r.status);
    return;
  }
  const body = $('dead').tBodies[0];
  clear(body);
  for (const it of r.body.matches) {
    const open = el('button', it.id, { class: 'link', type: 'button' });
    open.addEventListener('click', () => showTask(r.body.type, it.id));
    body.appendChild(el('tr', null, { 'data-id': it.id }, [
      el('td', null, {}, [open]),
      el('td', when(it.died_at)),
      el('td', it.attempt),
      el('td', it.error, { class: 'error' }),
    ]));
  }
  search.next = r.body.cursor;
  $('dead-range').textContent = r.body.matches.length + ' matches shown, newest first' +
    (r.body.cursor ? ' (more older)' : '');
  $('dead-prev').disabled = search.prev.length === 0;
  $('dead-next').disabled = !r.body.cursor;
}

/* Counts every match, a few pages a request; resolves to the count, or
 * null when a newer search replaced this one or the console failed. */
async function searchCount() {
  const gen = search.gen;
  let cursor = null, n = 0;
  for (;;) {
    const q = new URLSearchParams(search.q);
    q.set('list', 0);
    if (cursor) q.set('cursor', cursor);
    let r;
    try { r = await api('api/dead/search?' + q); } catch (e) { r = { status: 0, body: {} }; }
    if (gen !== search.gen) return null;
    if (r.status === 503) {
      await new Promise(ok => setTimeout(ok, 1000 * Math.max(1, r.retryAfter)));
      continue;
    }
    if (r.status !== 200) {
      $('search-count').textContent = r.body.error || 'the count failed';
      return null;
    }
    n += r.body.matched;
    cursor = r.body.cursor;
    $('search-count').textContent = n + ' matching' +
      (cursor ? ' so far (' + r.body.scanned + ' of ' + r.body.total + ' read)…' : '');
    if (!cursor) return n;
  }
}

function searchStart() {
  search.gen++;
  search.q = searchQuery();
  search.on = !!search.q;
  search.prev = [];
  search.current = null;
  search.next = null;
  $('bulk-progress').textContent = '';
  $('search-count').textContent = '';
  $('bulk').hidden = !search.on || !(state.overview && state.overview.actions);
  if (!search.on) {
    state.deadSeen = -1;
    loadDead();
    return;
  }
  searchPage(null);
  search.count = searchCount();
}

/* Replays or purges every match, a page a request, after a confirmation
 * that names how many. */
async function bulk(action) {
  if (!search.on) return;
  const gen = search.gen;
  const n = await search.count;
  if (n === null || gen !== search.gen) return;
  if (n === 0) { $('bulk-progress').textContent = 'nothing matches'; return; }
  let token = $('token').value || sessionStorage.getItem('wharf-console-token') || '';
  if (!token) token = prompt('[console] token') || '';
  if (!token) return;
  if (!confirm(action + ' ' + n + ' dead tasks of ' + state.deadType + ' matching ' +
               searchText() + '?')) return;
  sessionStorage.setItem('wharf-console-token', token);
  let cursor = null, acted = 0;
  for (;;) {
    const q = new URLSearchParams(search.q);
    if (cursor) q.set('cursor', cursor);
    let r;
    try {
      r = await api('api/dead/' + action + '?' + q,
                    { method: 'POST', headers: { Authorization: 'Bearer ' + token } });
    } catch (e) { r = { status: 0, body: {} }; }
    if (r.status === 503) {
      await new Promise(ok => setTimeout(ok, 1000 * Math.max(1, r.retryAfter)));
      continue; /* the same cursor: a page is safe to ask for again */
    }
    if (r.status !== 200) {
      $('bulk-progress').textContent = action + ': ' + (r.body.error || 'error ' + r.status) +
        ' after ' + acted;
      $('bulk-progress').className = 'error';
      return;
    }
    acted += r.body.acted;
    cursor = r.body.cursor;
    $('bulk-progress').className = '';
    $('bulk-progress').textContent = action + ': ' + acted + ' of ' + n +
      (cursor ? ' (' + r.body.scanned + ' of ' + r.body.total + ' read)…' : ', done');
    if (!cursor) break;
  }
  search.gen++;
  search.count = searchCount();
  searchPage(null);
}

function startSearch() {
  $('dead-search').addEventListener('submit', ev => { ev.preventDefault(); searchStart(); });
  $('search-clear').addEventListener('click', () => {
    for (const id of ['search-grep', 'search-since', 'search-before', 'search-attempts', 'search-prefix'])
      $(id).value = '';
    searchStart();
  });
  for (const b of document.querySelectorAll('#bulk button'))
    b.addEventListener('click', () => bulk(b.getAttribute('data-bulk')));
}

function say(text, error) {
  $('message').textContent = text;
  $('message').className = error ? 'error' : '';
}

/* A task asked for while the console is busy (503) or away is asked for
 * again after the wait the console names, for as long as it is still the
 * task wanted: a link opened under load shows the task when it can. */
function askAgain(type, id, keepMessage, seconds) {
  const ms = Math.max(1, seconds || 0) * 1000;
  clearTimeout(state.again);
  state.again = setTimeout(() => {
    const w = state.wanted;
    if (w && w.type === type && w.id === id) showTask(type, id, keepMessage);
  }, ms);
}

async function showTask(type, id, keepMessage) {
  const q = new URLSearchParams({ id: id });
  if (type) q.set('type', type);
  state.wanted = { type: type, id: id };
  let r;
  try {
    r = await api('api/task?' + q);
  } catch (e) {
    say('the console did not answer; asking again', true);
    askAgain(type, id, keepMessage, 0);
    return;
  }
  const t = r.body;
  if (r.status === 503) askAgain(type, id, keepMessage, r.retryAfter);
  if (r.status !== 200 && r.status !== 404 && state.detail &&
      state.detail.id === id) {
    /* Busy or away for a moment: the task as last seen stays, buttons
     * and all, with the reason; the next look brings it up to date. */
    say(t.error || 'error ' + r.status, true);
    return;
  }
  $('detail').hidden = false;
  $('detail-id').textContent = id;
  $('detail-type').textContent = t.type || type || '-';
  $('detail-status').textContent = t.status || ('error ' + r.status);
  if (r.status !== 200 && r.status !== 404) say(t.error || 'error ' + r.status, true);
  else if (!keepMessage) say('');
  state.detail = t.type ? { type: t.type, id: id } : null;
  const extra = [];
  if (t.died_at) extra.push('died ' + when(t.died_at));
  if (t.due_at) extra.push('due ' + when(t.due_at));
  if (t.worker) extra.push('on ' + t.worker + ' for ' + duration(t.running_ms));
  if (t.lock_ms_left) extra.push('lock ' + t.lock_ms_left + ' ms left');
  $('detail-extra').textContent = extra.join(', ');
  $('detail-trace').textContent = t.trace_id || '-';
  $('payload').textContent = t.payload ? t.payload.preview : '(no envelope: the payload is kept only while a task is delayed or dead)';
  $('payload-size').textContent = t.payload ? t.payload.bytes + ' bytes' + (t.payload.cut ? ', first ' + t.payload.preview.length + ' shown' : '') : '';
  $('result-box').hidden = !t.result;
  $('result').textContent = t.result ? t.result.preview : '';
  $('result-size').textContent = t.result ? t.result.bytes + ' bytes' : '';
  const body = $('fields').tBodies[0];
  clear(body);
  for (const f of t.fields || []) {
    /* times (ms since the epoch) also as a date, as wharf dead show does */
    const value = /_at$/.test(f.name) && /^[0-9]{12,14}$/.test(f.value)
      ? f.value + ' (' + when(f.value) + ')' : f.value;
    body.appendChild(el('tr', null, {}, [el('th', f.name), el('td', null, {}, [el('pre', value)])]));
  }
  const actionsOn = !!(state.overview && state.overview.actions);
  $('actions').hidden = !actionsOn || !state.detail;
  $('read-only').hidden = actionsOn || !state.detail;
  $('act-replay').disabled = t.status !== 'dead';
  $('act-purge').disabled = t.status !== 'dead';
  $('act-cancel').disabled =
      !['queued', 'delayed', 'running'].includes(t.status);
}

async function act(action) {
  if (!state.detail) return;
  const token = $('token').value;
  sessionStorage.setItem('wharf-console-token', token);
  const q = new URLSearchParams({ type: state.detail.type, id: state.detail.id });
  let r;
  try {
    r = await api('api/' + action + '?' + q, {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + token },
    });
  } catch (e) {
    say(action + ': the console did not answer; try again', true);
    return;
  }
  const done = r.body.already_cancelled ? 'cancelled already' : 'done';
  const message = r.status === 200 ? action + ': ' + done
                                   : action + ': ' + (r.body.error || r.status);
  try {
    await showTask(state.detail.type, state.detail.id, true);
  } catch (e) {
    /* the outcome below is what matters; the detail is refreshed later */
  }
  say(message, r.status !== 200);
  state.deadSeen = -1;
}

/* The schedules this host runs (api/schedules); the panel is hidden
 * when there are none. Ticks are seconds since the epoch, 0 for none. */
function renderSchedules(o) {
  const list = o.schedules || [];
  $('schedules-box').hidden = list.length === 0;
  const body = $('schedules').tBodies[0];
  clear(body);
  for (const s of list) {
    body.appendChild(el('tr', null, {}, [
      el('td', s.name, { class: 'mono' }),
      el('td', s.type),
      el('td', s.when, { class: 'mono' }),
      el('td', s.timezone),
      el('td', s.last_tick ? when(s.last_tick * 1000) : '-'),
      el('td', s.next_tick ? when(s.next_tick * 1000) : '-'),
      el('td', s.lag_ms === undefined ? '-' : s.lag_ms < 1000 ? s.lag_ms + ' ms' : duration(s.lag_ms)),
      el('td', s.fired),
    ]));
  }
}

/* ---- the fleet's history (api/history) ---- */

const HISTORY_POLL_MS = 15000;
const HISTORY_BARS = 240; /* at most: 6 h and 24 h group minutes */
const fleet = { minutes: 60, type: '', host: '', readAt: 0, busy: false };

/* The history chart: per bar (a minute, or several for 6 h and 24 h) ok
 * under retry under dead under cancelled, scaled to the busiest bar, and
 * the run time's p95 as a line on a scale of its own. */
function historyChart(h) {
  const ns = 'http://www.w3.org/2000/svg';
  const kinds = ['ok', 'retry', 'dead', 'cancelled'];
  const steps = h.minutes;
  const per = Math.ceil(steps / HISTORY_BARS);
  const n = Math.ceil(steps / per);
  const W = 720, H = 120, top = 14, bottom = 16;
  const bw = W / n;
  const bars = [];
  for (let i = 0; i < n; i++) {
    const b = { p95: null };
    for (const k of kinds) b[k] = 0;
    for (let j = i * per; j < Math.min(steps, (i + 1) * per); j++) {
      for (const k of kinds) b[k] += h.series[k][j] || 0;
      const p = h.series.run_p95_ms[j];
      if (p !== null && p !== undefined)
        b.p95 = Math.max(b.p95 === null ? 0 : b.p95, p < 0 ? 10000 : p);
    }
    bars.push(b);
  }
  const peak = Math.max(0, ...bars.map(b => kinds.reduce((a, k) => a + b[k], 0)));
  const slowest = Math.max(0, ...bars.map(b => b.p95 || 0));
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'history');
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  const plot = H - top - bottom;
  add('line', { class: 'base', x1: 0, x2: W, y1: H - bottom + 0.5, y2: H - bottom + 0.5 });
  const points = [];
  bars.forEach((b, i) => {
    let y = H - bottom;
    for (const k of kinds) {
      if (!b[k] || !peak) continue;
      const bh = Math.max(1, b[k] * plot / peak);
      y -= bh;
      add('rect', { class: k, x: (i * bw).toFixed(2), y: y.toFixed(2),
                    width: Math.max(0.5, bw - (bw > 2 ? 1 : 0)).toFixed(2),
                    height: bh.toFixed(2), 'data-bar': i });
    }
    if (b.p95 !== null && slowest > 0)
      points.push(((i + 0.5) * bw).toFixed(1) + ',' +
                  (H - bottom - b.p95 * plot / slowest).toFixed(1));
  });
  if (points.length > 1) add('polyline', { class: 'p95', points: points.join(' ') });
  const from = new Date(h.from_ms).toISOString().slice(11, 16);
  add('text', { x: 2, y: H - 3 }, from + ' UTC');
  add('text', { x: W - 2, y: H - 3, 'text-anchor': 'end' }, 'now');
  add('text', { x: 2, y: 11 }, peak ? 'peak ' + peak + ' per ' + (per === 1 ? 'minute' : per + ' minutes') : 'nothing ran');
  if (slowest)
    add('text', { x: W - 2, y: 11, 'text-anchor': 'end' }, 'run p95 up to ' + ms(slowest) + ' (line)');
  add('title', {}, 'ok green, retry amber, dead red, cancelled purple; run p95 blue');
  return svg;
}

function historyTotal(h) {
  const t = h.total;
  const q = v => (v === null ? '-' : v < 0 ? '> 10 s' : ms(v));
  return 'last ' + (h.minutes >= 60 ? h.minutes / 60 + ' h' : h.minutes + ' min') +
    (h.host ? ' on ' + h.host : ' on all hosts') + ': ok ' + t.ok + ', retry ' + t.retry +
    ', dead ' + t.dead + ', cancelled ' + t.cancelled + '; wait p50 ' + q(t.wait_p50_ms) +
    ', p95 ' + q(t.wait_p95_ms) + '; run p50 ' + q(t.run_p50_ms) + ', p95 ' + q(t.run_p95_ms);
}

async function loadHistory() {
  if (fleet.busy) return;
  fleet.busy = true;
  fleet.readAt = Date.now();
  const q = new URLSearchParams({ minutes: fleet.minutes });
  if (fleet.type) q.set('type', fleet.type);
  if (fleet.host) q.set('host', fleet.host);
  try {
    const r = await api('api/history?' + q);
    const box = $('history-chart');
    if (r.status !== 200) {
      $('history-total').textContent = r.body.error || ('error ' + r.status);
      return;
    }
    clear(box);
    box.appendChild(historyChart(r.body));
    $('history-total').textContent = historyTotal(r.body);
    /* the hosts that wrote any of it, keeping the one chosen */
    const hosts = r.body.hosts.slice().sort();
    if (fleet.host && !hosts.includes(fleet.host)) hosts.push(fleet.host);
    syncTypeSelect($('history-host'), hosts, true);
    $('history-host').value = fleet.host;
    /* every type of the fleet, from a read of all of them */
    if (r.body.types) {
      syncTypeSelect($('history-type'), r.body.types, true);
      $('history-type').value = fleet.type;
    }
  } catch (e) {
    $('history-total').textContent = 'the console did not answer';
  } finally {
    fleet.busy = false;
  }
}

function startHistory() {
  $('history-type').addEventListener('change', () => {
    fleet.type = $('history-type').value;
    loadHistory();
  });
  $('history-host').addEventListener('change', () => {
    fleet.host = $('history-host').value;
    loadHistory();
  });
  for (const b of document.querySelectorAll('#history-range button'))
    b.addEventListener('click', () => {
      fleet.minutes = Number(b.getAttribute('data-minutes'));
      for (const o of document.querySelectorAll('#history-range button'))
        o.className = o === b ? 'on' : '';
      loadHistory();
    });
}

async function poll() {
  try {
    const r = await api('api/overview');
    if (r.status === 200) renderOverview(r.body);
    const s = await api('api/schedules');
    if (s.status === 200) renderSchedules(s.body);
  } catch (e) {
    $('redis').textContent = 'console unreachable';
    $('redis').className = 'badge down';
  }
  setTimeout(poll, POLL_MS);
}

function start() {
  $('token').value = sessionStorage.getItem('wharf-console-token') || '';
  $('find').addEventListener('submit', ev => {
    ev.preventDefault();
    const id = $('find-id').value.trim();
    if (id) showTask($('find-type').value, id);
  });
  $('dead-type').addEventListener('change', () => {
    state.deadType = $('dead-type').value;
    state.deadOffset = 0;
    state.deadSeen = -1;
    if (search.on) searchStart();
    else loadDead();
  });
  $('dead-prev').addEventListener('click', () => {
    if (search.on) {
      search.current = search.prev.pop() || null;
      searchPage(search.current);
      return;
    }
    state.deadOffset = Math.max(0, state.deadOffset - DEAD_PAGE);
    loadDead();
  });
  $('dead-next').addEventListener('click', () => {
    if (search.on) {
      search.prev.push(search.current || null);
      search.current = search.next;
      searchPage(search.next);
      return;
    }
    state.deadOffset += DEAD_PAGE;
    loadDead();
  });
  startSearch();
  for (const b of document.querySelectorAll('#actions button'))
    b.addEventListener('click', () => act(b.getAttribute('data-action')));
  startHistory();
  /* #type=T&id=ID opens that task (links from logs or chat);
   * #type=T&grep=..&since=.. (any of the search's fields) opens that
   * search of T's dead set. */
  const h = new URLSearchParams(location.hash.slice(1));
  const fields = { grep: 'search-grep', since: 'search-since', before: 'search-before',
                   attempts: 'search-attempts', id_prefix: 'search-prefix' };
  for (const [k, id] of Object.entries(fields))
    if (h.get(k)) { $(id).value = h.get(k); state.searchOnLoad = true; }
  if (state.searchOnLoad && h.get('type')) state.deadType = h.get('type');
  if (h.get('id')) {
    $('find-id').value = h.get('id');
    showTask(h.get('type') || '', h.get('id'));
  }
  poll();
}

start();
