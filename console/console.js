/* global document, window, EventSource, uPlot, Node, CustomEvent */
// The operator console's live panels: federation figures, one row per engine with a latency
// chart, and the experiments read-out. Plain DOM and uPlot, no build step. Data comes from
// /console/api/stream (Server-Sent Events): `history` once (the chart points the gateway holds),
// then a `state` frame a second. The search explorer lives in explorer.js.
'use strict';
(() => {
  /** h('td', { class: 'num' }, 'text', childNode): a tiny element builder. */
  const h = (tag, attrs = {}, ...children) => {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
      else if (key === 'dataset') Object.assign(el.dataset, value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  };
  const num = (x, digits = 1) => (x === null || x === undefined ? '—' : Number(x).toFixed(digits));
  const pct = (x) => (x === null || x === undefined ? '—' : `${(x * 100).toFixed(1)} %`);
  const clock = (ms) => (ms ? new Date(ms).toLocaleTimeString() : '—');
  const PALETTE = ['#2b6cb0', '#c05621', '#2f855a', '#6b46c1', '#b83280', '#2c7a7b', '#975a16', '#4a5568'];
  window.rcpConsole = { h, num, pct, PALETTE };

  // ------------------------------------------------------------ chart points --
  const MAX_POINTS = 300;
  let points = [];
  const pushPoint = (point) => {
    if (points.length > 0 && points[points.length - 1].at >= point.at) return;
    points.push(point);
    if (points.length > MAX_POINTS) points.shift();
  };
  const charts = new Map();
  const seconds = () => points.map((p) => p.at / 1000);
  const small = (series, height = 56, width = 220) => ({
    width,
    height,
    legend: { show: false },
    cursor: { show: false },
    axes: [{ show: false }, { size: 36, space: 16, font: '10px system-ui', ticks: { show: false }, grid: { width: 0.5 } }],
    scales: { x: { time: true } },
    series: [{}, ...series.map((s) => ({ points: { show: false }, width: 1.5, ...s }))],
  });
  const plot = (container, key, options, data) => {
    const existing = charts.get(key);
    if (existing && container.contains(existing.root)) return existing.setData(data);
    container.textContent = '';
    charts.set(key, new uPlot(options, data, container));
  };
  const LATENCY_SERIES = [
    { label: 'p50', stroke: '#2b6cb0' },
    { label: 'p95', stroke: '#b7791f' },
    { label: 'p99', stroke: '#c53030' },
  ];
  const latencyData = (id) => [seconds(), ...['p50', 'p95', 'p99'].map((q) => points.map((p) => p.engines[id]?.[q] ?? null))];

  // -------------------------------------------------------------- federation --
  const card = (label, value, note) => h('div', { class: 'card' }, h('b', {}, value), label, note ? h('small', {}, ` ${note}`) : null);
  const renderFederation = (state) => {
    const f = state.federation;
    const r = f.rates;
    const box = document.getElementById('federation');
    box.replaceChildren(
      card('requests/s', num(r?.requestsPerSec)),
      card('errors/s', num(r?.errorsPerSec)),
      card('degraded share', pct(r?.degradedShare)),
      card('deadline hits/s', num(r?.deadlineHitsPerSec), `${f.totals.deadlineHits} total`),
      card('rate limited/s', num(r?.rateLimitedPerSec), `${f.totals.rateLimited} total`),
      card('retries/s', num(r?.retriesPerSec), `${f.totals.retries} total`),
      card('retry budget refused/s', num(r?.retryDeniedPerSec), `${f.totals.retryDenied} total`),
      card('SSE streams open', String(f.sseStreamsOpen)),
      card('in flight', String(f.inFlight)),
    );
    plot(document.getElementById('federation-chart'), 'federation', small([{ label: 'req/s', stroke: '#2b6cb0' }], 70, 460), [
      seconds(),
      points.map((p) => p.requestsPerSec),
    ]);
  };

  // ----------------------------------------------------------------- engines --
  const rows = new Map();
  const pill = (text) => h('span', { class: `pill ${text}` }, text);
  const breakerCell = (b, now) => {
    const parts = [pill(b.state)];
    if (b.changedAt) parts.push(h('div', { class: 'muted' }, `since ${clock(b.changedAt)}`));
    if (b.retryAt)
      parts.push(h('div', { class: 'muted' }, `retry ${clock(b.retryAt)} (in ${Math.max(0, Math.round((b.retryAt - now) / 1000))} s)`));
    if (b.openings > 0) parts.push(h('div', { class: 'muted' }, `${b.openings} opening${b.openings > 1 ? 's' : ''} in a row`));
    return parts;
  };
  const errorsCell = (rates) => {
    if (!rates) return '—';
    const classes = Object.entries(rates.failuresPerSec).map(([reason, perSec]) =>
      h('div', { class: 'muted' }, `${reason} ${num(perSec, 2)}/s`),
    );
    return [pct(rates.errorRate), ...classes];
  };
  /**
   * An engine with replicas: one line per replica, by its index as catalog/list and the metrics
   * name it (never its address), then the hedged reads when the engine hedges.
   */
  const replicasCell = (set) => {
    if (!set) return null;
    const lines = set.replicas.map((r) =>
      h(
        'div',
        { class: 'replica muted', dataset: { replica: String(r.replica), state: r.state } },
        `#${r.replica} `,
        pill(r.state),
        ` ${r.inFlight} in flight · ${r.ewmaMs === undefined ? '—' : `${num(r.ewmaMs)} ms`} · ${r.calls} calls`,
        r.ejections > 0 ? ` · ${r.ejections} ejection${r.ejections > 1 ? 's' : ''}` : '',
        r.retryInMs !== undefined ? ` · trial in ${Math.ceil(r.retryInMs / 1000)} s` : '',
      ),
    );
    const hg = set.hedges;
    if (hg.delayMs !== undefined || hg.sent + hg.denied + hg.capped > 0) {
      const delay = hg.delayMs === undefined ? '' : ` · after ${num(hg.delayMs)} ms`;
      const counts = `${hg.sent} sent · ${hg.won} won · ${hg.lost} lost · ${hg.denied} over budget · ${hg.capped} at the cap`;
      lines.push(h('div', { class: 'hedges muted' }, `hedges ${counts}${delay}`));
    }
    return h('div', { class: 'replicas' }, lines);
  };
  const engineRow = (engine, now) => {
    let row = rows.get(engine.id);
    if (!row) {
      const chart = h('td', { class: 'chart-cell' });
      row = { tr: h('tr', { dataset: { engine: engine.id } }), chart };
      rows.set(engine.id, row);
    }
    const r = engine.rates;
    row.tr.dataset.breaker = engine.breaker.state;
    row.tr.dataset.status = engine.status;
    const cells = [
      h('td', {}, h('b', {}, engine.id), h('div', { class: 'muted' }, engine.server ?? engine.transport)),
      h(
        'td',
        { title: engine.lastError ?? '' },
        pill(engine.status),
        engine.lastError ? h('div', { class: 'muted error' }, engine.lastError) : null,
        replicasCell(engine.replicas),
      ),
      h('td', { class: 'breaker' }, breakerCell(engine.breaker, now)),
      h('td', { class: 'num' }, `${engine.activeCalls} / ${engine.queueDepth} (${engine.maxQueue})`),
      h(
        'td',
        { class: 'num', title: `${engine.totals.calls} calls, ${engine.totals.failedCalls} failed since start` },
        num(r?.requestsPerSec),
      ),
      h('td', {}, errorsCell(r)),
      h('td', { class: 'num' }, `${num(r?.p50)} / ${num(r?.p95)} / ${num(r?.p99)}`),
      row.chart,
      h('td', { class: 'num' }, String(engine.weight)),
      h('td', { class: 'num' }, String(engine.priority)),
      h('td', { class: 'caps' }, engine.capabilities.join(', ')),
    ];
    row.tr.replaceChildren(...cells);
    plot(row.chart, `engine:${engine.id}`, small(LATENCY_SERIES), latencyData(engine.id));
    return row.tr;
  };
  const renderEngines = (state) => {
    const body = document.querySelector('#engines tbody');
    const seen = new Set(state.engines.map((e) => e.id));
    for (const id of rows.keys()) if (!seen.has(id)) rows.delete(id);
    body.replaceChildren(...state.engines.map((engine) => engineRow(engine, state.at)));
  };

  // ------------------------------------------------------------- experiments --
  // The read-out's shape belongs to the experiments feature; this renders any JSON sensibly:
  // lists of records as tables, number lists as small distribution charts, the rest as fields.
  const isScalar = (v) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
  const isNumberList = (v) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number');
  const isRecordList = (v) => Array.isArray(v) && v.length > 0 && v.every((x) => x && typeof x === 'object' && !Array.isArray(x));
  const isPlain = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  /** `{ name: { figure: 1, … }, … }` (e.g. the arms of an experiment): one table row per name. */
  const isRecordMap = (v) =>
    isPlain(v) &&
    Object.keys(v).length > 0 &&
    Object.values(v).every((r) => isPlain(r) && Object.values(r).every((x) => isScalar(x) || isNumberList(x)));
  const scalarText = (v) => (typeof v === 'number' ? String(Number.isInteger(v) ? v : Number(v.toPrecision(4))) : String(v));
  const distribution = (values) => {
    const bins = 20;
    const min = Math.min(...values);
    const span = Math.max(...values) - min || 1;
    const counts = new Array(bins).fill(0);
    for (const v of values) counts[Math.min(bins - 1, Math.floor(((v - min) / span) * bins))]++;
    const top = Math.max(...counts);
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('class', 'dist');
    svg.setAttribute('viewBox', `0 0 ${bins * 6} 30`);
    svg.setAttribute('width', String(bins * 6));
    svg.setAttribute('height', '30');
    counts.forEach((c, i) => {
      const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
      const height = (c / top) * 30;
      for (const [k, v] of Object.entries({ x: i * 6, y: 30 - height, width: 5, height })) rect.setAttribute(k, String(v));
      svg.append(rect);
    });
    return h('span', { title: `${values.length} values, ${scalarText(min)} – ${scalarText(min + span)}` }, svg);
  };
  const cell = (v) => (isScalar(v) ? scalarText(v) : isNumberList(v) ? distribution(v) : JSON.stringify(v));
  const renderValue = (value) => {
    if (isRecordMap(value)) return renderValue(Object.entries(value).map(([name, record]) => ({ name, ...record })));
    if (isRecordList(value)) {
      const columns = [...new Set(value.flatMap((record) => Object.keys(record)))];
      const scalarColumns = columns.filter((c) => value.every((r) => isScalar(r[c]) || isNumberList(r[c]) || r[c] === undefined));
      const nested = columns.filter((c) => !scalarColumns.includes(c));
      const table = h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            scalarColumns.map((c) => h('th', {}, c)),
          ),
        ),
        h(
          'tbody',
          {},
          value.map((r) =>
            h(
              'tr',
              {},
              scalarColumns.map((c) => h('td', {}, r[c] === undefined ? '' : cell(r[c]))),
            ),
          ),
        ),
      );
      const details = value.flatMap((r, i) =>
        nested.filter((c) => r[c] !== undefined).map((c) => h('div', {}, h('h4', {}, `${r.id ?? r.name ?? i} · ${c}`), renderValue(r[c]))),
      );
      return h('div', {}, table, details);
    }
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return h(
        'div',
        {},
        Object.entries(value).map(([key, v]) =>
          isScalar(v) || isNumberList(v) ? h('div', {}, h('b', {}, `${key}: `), cell(v)) : h('div', {}, h('h4', {}, key), renderValue(v)),
        ),
      );
    }
    return h('span', {}, cell(value));
  };
  const renderExperiments = (readout) => {
    const box = document.getElementById('experiments');
    if (readout === null || readout === undefined) return box.replaceChildren(h('p', { class: 'muted' }, 'no experiments'));
    if (readout.error) return box.replaceChildren(h('p', { class: 'error' }, `experiments: ${readout.error}`));
    const list = readout.experiments?.experiments ?? readout.experiments;
    const empty = Array.isArray(list) ? list.length === 0 : !list || Object.keys(list).length === 0;
    box.replaceChildren(empty ? h('p', { class: 'muted' }, 'no experiments') : renderValue(list));
  };

  // -------------------------------------------------------------------- live --
  const live = document.getElementById('live');
  const setLive = (on) => {
    live.classList.toggle('off', !on);
    live.textContent = on ? 'live' : 'reconnecting…';
  };
  const stream = new EventSource('/console/api/stream');
  stream.addEventListener('open', () => setLive(true));
  stream.addEventListener('error', () => setLive(false));
  stream.addEventListener('history', (event) => {
    points = [];
    for (const point of JSON.parse(event.data)) pushPoint(point);
  });
  stream.addEventListener('state', (event) => {
    const frame = JSON.parse(event.data);
    setLive(true);
    pushPoint(frame.point);
    document.getElementById('gateway-name').textContent = frame.state.gateway.name;
    document.getElementById('updated').textContent = `updated ${clock(frame.state.at)}`;
    renderFederation(frame.state);
    renderEngines(frame.state);
    renderExperiments(frame.experiments);
    document.dispatchEvent(new CustomEvent('rcp-state', { detail: frame.state }));
  });
})();
