/* The console's workflow groups: a box to name a group, and its progress
 * (GET /api/group, docs/console.md) read again every second while shown.
 * Data is set with textContent only, as in console.js. */
'use strict';

(function groups() {
  const POLL_MS = 1000;
  let shown = '';
  let timer = 0;

  function make(tag, text, attrs) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  const box = make('section', null, { id: 'groups-box' });
  const form = make('form', null, { id: 'group-form' });
  const input = make('input', null, { id: 'group-name', placeholder: 'group', 'aria-label': 'group' });
  const button = make('button', 'show', { type: 'submit' });
  const out = make('div', null, { id: 'group' });
  box.appendChild(make('h2', 'Workflow group'));
  form.appendChild(input);
  form.appendChild(button);
  box.appendChild(form);
  box.appendChild(out);
  document.querySelector('main').appendChild(box);

  function render(g) {
    while (out.firstChild) out.removeChild(out.firstChild);
    if (g.error) {
      out.appendChild(make('p', g.error, { class: 'muted' }));
      return;
    }
    const ended = g.ok + g.dead;
    const bar = make('progress', null, { max: String(g.n || 1), value: String(ended) });
    out.appendChild(make('p', `${g.group}: ${ended} of ${g.n} ended (${g.ok} ok, ${g.dead} dead, ${g.pending} pending)`));
    out.appendChild(bar);
    out.appendChild(make('p', `callback ${g.callback_type} group:${g.group}: ${g.callback}`, { class: 'muted' }));
  }

  async function poll() {
    clearTimeout(timer);
    if (!shown) return;
    try {
      const r = await fetch(`api/group?group=${encodeURIComponent(shown)}`, { cache: 'no-store' });
      const body = await r.json();
      render(r.ok ? body : { error: body.error || `HTTP ${r.status}` });
    } catch (e) {
      render({ error: String(e) });
    }
    timer = setTimeout(poll, POLL_MS);
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    shown = input.value.trim();
    poll();
  });
}());
