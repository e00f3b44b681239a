/* global document, window, EventSource, URLSearchParams, FormData */
// The search explorer: one retrieve through the gateway with fusion lineage, streamed from
// /console/api/search. Shows progress while engines answer, then the fused list (each hit with
// the contributions that add up to its fused score) beside each engine's own list.
'use strict';
(() => {
  const { h, num, PALETTE } = window.rcpConsole;
  const form = document.getElementById('search-form');
  const picks = document.getElementById('engine-picks');
  const progressBox = document.getElementById('search-progress');
  const progressBar = progressBox.querySelector('.bar span');
  const progressLog = document.getElementById('progress-log');
  const errorBox = document.getElementById('search-error');
  const results = document.getElementById('results');
  let engines = [];
  let search;

  // Engine picks (checkbox + weight) follow the live engine list.
  document.addEventListener('rcp-state', (event) => {
    const ids = event.detail.engines.map((e) => e.id);
    if (ids.join('\u0000') === engines.map((e) => e.id).join('\u0000')) return;
    engines = event.detail.engines.map((e) => ({ id: e.id, weight: e.weight }));
    picks.replaceChildren(
      ...engines.map((e) =>
        h(
          'label',
          { class: 'pick' },
          h('input', { type: 'checkbox', name: 'engine', value: e.id, checked: true }),
          ` ${e.id} × `,
          h('input', { type: 'number', name: `weight:${e.id}`, min: '0', step: '0.1', value: String(e.weight) }),
        ),
      ),
    );
  });

  const colorOf = (engine) =>
    PALETTE[
      Math.max(
        0,
        engines.findIndex((e) => e.id === engine),
      ) % PALETTE.length
    ];

  const queryString = () => {
    const data = new FormData(form);
    const params = new URLSearchParams({ q: String(data.get('q') ?? ''), k: String(data.get('k') || 10) });
    if (data.get('fusion')) params.set('fusion', String(data.get('fusion')));
    if (data.get('rrfK') !== '') params.set('rrfK', String(data.get('rrfK')));
    const chosen = data.getAll('engine').map(String);
    if (chosen.length > 0 && chosen.length < engines.length) params.set('engines', chosen.join(','));
    const weights = engines
      .filter((e) => data.get(`weight:${e.id}`) !== null && Number(data.get(`weight:${e.id}`)) !== e.weight)
      .map((e) => `${e.id}:${Number(data.get(`weight:${e.id}`))}`);
    if (weights.length > 0) params.set('weights', weights.join(','));
    return params;
  };

  // Hovering a hit anywhere highlights the same document in every list.
  const highlight = (id, on) => {
    for (const row of results.querySelectorAll('tr[data-id]')) row.classList.toggle('hl', on && row.dataset.id === id);
  };
  const hitRow = (id, cells) =>
    h(
      'tr',
      { dataset: { id: String(id) }, onmouseenter: () => highlight(String(id), true), onmouseleave: () => highlight(String(id), false) },
      cells,
    );

  const lineageCell = (entry) => {
    if (!entry) return h('td', { class: 'lineage muted' }, 'no lineage');
    const sum = entry.contributions.reduce((total, c) => total + c.contribution, 0);
    const widest = Math.max(...entry.contributions.map((c) => c.contribution), 1e-12);
    return h(
      'td',
      { class: 'lineage', dataset: { sum: String(sum), engines: entry.contributions.map((c) => c.engine).join(',') } },
      entry.contributions.map((c) =>
        h(
          'span',
          {
            class: 'contribution',
            dataset: { engine: c.engine, rank: String(c.rank) },
            title: `weight ${c.weight}, engine score ${c.score}`,
          },
          h('i', { style: `width:${Math.round((c.contribution / widest) * 40)}px;background:${colorOf(c.engine)}` }),
          `${c.engine} #${c.rank} → ${num(c.contribution, 5)}`,
        ),
      ),
      h('span', { class: 'muted' }, ` = ${num(sum, 5)}`),
    );
  };

  const renderResult = (result) => {
    const lineage = result.lineage;
    const fused = h(
      'div',
      { id: 'fused' },
      h('h3', {}, `fused (${result.fusion ?? '?'}${lineage ? `, rrfK ${lineage.rrfK}` : ''}) · ${result.elapsedMs} ms`),
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'id'), h('th', {}, 'fused score'), h('th', {}, 'lineage'))),
        h(
          'tbody',
          {},
          result.hits.map((hit, i) =>
            hitRow(hit.id, [
              h('td', { class: 'num' }, String(i + 1)),
              h('td', { title: hit.text }, String(hit.id), h('div', { class: 'excerpt' }, hit.text.slice(0, 90))),
              h('td', { class: 'num score', dataset: { score: String(hit.score) } }, num(hit.score, 5)),
              lineageCell(lineage?.hits[i]),
            ]),
          ),
        ),
      ),
    );
    const lists = (lineage?.lists ?? []).map((list) =>
      h(
        'div',
        { class: 'engine-list', dataset: { engine: list.engine } },
        h('h3', { style: `color:${colorOf(list.engine)}` }, `${list.engine} (weight ${list.weight})`),
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'id'), h('th', {}, 'score'))),
          h(
            'tbody',
            {},
            list.hits.map((hit) =>
              hitRow(hit.id, [
                h('td', { class: 'num' }, String(hit.rank)),
                h('td', { title: hit.text ?? '' }, String(hit.id)),
                h('td', { class: 'num' }, num(hit.score, 3)),
              ]),
            ),
          ),
        ),
      ),
    );
    const degraded = result.degraded.map((d) => h('p', { class: 'error' }, `${d.engine} left out: ${d.reason ?? d.code ?? 'failed'}`));
    results.replaceChildren(fused, ...lists);
    if (degraded.length > 0) results.prepend(h('div', {}, degraded));
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    search?.close();
    results.replaceChildren();
    errorBox.hidden = true;
    progressBox.hidden = false;
    progressBar.style.width = '0';
    progressLog.replaceChildren();
    search = new EventSource(`/console/api/search?${queryString()}`);
    const done = () => search.close(); // one search per stream: no reconnect, which would search again
    search.addEventListener('progress', (e) => {
      const p = JSON.parse(e.data);
      if (p.progress !== null) progressBar.style.width = `${Math.round(p.progress * 100)}%`;
      progressLog.append(
        h(
          'li',
          {},
          `${p.elapsedMs} ms · ${[p.stage, p.message].filter(Boolean).join(': ')}${p.top.length ? ` · top so far ${p.top.join(', ')}` : ''}`,
        ),
      );
    });
    search.addEventListener('result', (e) => {
      done();
      progressBar.style.width = '100%';
      renderResult(JSON.parse(e.data));
    });
    search.addEventListener('failure', (e) => {
      done();
      const failure = JSON.parse(e.data);
      errorBox.textContent = `${failure.message} (${failure.code})`;
      errorBox.hidden = false;
    });
    search.addEventListener('error', () => {
      if (search.readyState !== EventSource.CLOSED) done();
    });
  });
})();
