"""The report page's inline stylesheet and script (the trajectory viewer), apart from the Python filling it.

Inline on purpose: report.html must work from file:// with no server and no network.
"""

from __future__ import annotations

STYLE = """
:root { --ok: #2e8b57; --bad: #c0392b; --muted: #777; --line: #ddd; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 1500px; padding: 12px 20px;
  color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid var(--line); }
table { border-collapse: collapse; margin: 8px 0; } .wide { overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td.name, th.name { text-align: left; }
td.ci { color: var(--muted); font-size: 12px; }
.verdict-REGRESSION { color: var(--bad); font-weight: bold; }
.verdict-NON-INFERIOR { color: var(--ok); } .verdict-INCONCLUSIVE { color: #a66f00; }
.plots { display: flex; flex-wrap: wrap; gap: 18px; }
.plots figure { margin: 0; } .plots figcaption { color: var(--muted); font-size: 12px; }
.outcome { display: inline-block; padding: 0 5px; border-radius: 3px; color: #fff; font-size: 12px; }
.o-success { background: #2e8b57; } .o-undone { background: #e08a2c; } .o-no_stop { background: #c9a227; }
.o-premature_done { background: #8062a8; } .o-nav_fail { background: #c0392b; }
.o-wrong_answer { background: #3a7ca5; }
.o-infra_error { background: #7a7a7a; }
#matrix td { padding: 2px 4px; } #matrix td.cell { cursor: pointer; }
#matrix td.cell:hover, #matrix td.cell.current { outline: 2px solid #333; }
#matrix .dot { display: inline-block; width: 10px; height: 10px; margin: 0 1px; border-radius: 2px; }
.episode { border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; padding: 8px; }
.episode header { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
.timeline { display: flex; gap: 2px; margin: 6px 0; align-items: center; }
.timeline .tick { width: 26px; height: 18px; font-size: 10px; text-align: center; line-height: 18px;
  border-radius: 3px; background: #eee; color: #555; position: relative; }
.timeline .tick[data-goal="on"] { background: #8fd19e; color: #063; }
.timeline .tick[data-mark="reached"] { outline: 2px solid var(--ok); }
.timeline .tick[data-mark="undone"] { outline: 2px solid var(--bad); background: #f3b0a8; }
.strip { display: flex; gap: 8px; overflow-x: auto; padding-bottom: 6px; }
.step { flex: 0 0 auto; width: 190px; font-size: 12px; }
.shot { position: relative; width: 180px; background: #f0f0f0; cursor: zoom-in; }
.shot img { width: 100%; display: block; }
.shot svg, .zoom svg { position: absolute; left: 0; top: 0; width: 100%; height: 100%; pointer-events: none; }
.step .label { font-weight: 600; margin-top: 3px; word-break: break-word; }
.step .goal-on { color: var(--ok); } .step .goal-off { color: var(--muted); }
.step details pre { white-space: pre-wrap; word-break: break-word; max-height: 220px; overflow: auto;
  background: #fafafa; border: 1px solid var(--line); padding: 4px; margin: 2px 0; font-size: 11px; }
.noshot { height: 120px; display: flex; align-items: center; justify-content: center; color: var(--muted); }
dialog.zoom { padding: 0; border: none; } dialog.zoom .frame { position: relative; }
dialog.zoom img { display: block; max-height: 92vh; }
.nav button { margin-right: 6px; }
button.outcome { border: none; cursor: pointer; } button.outcome.off { opacity: 0.3; }
#matrix td.cell.dim { opacity: 0.15; }
"""

SCRIPT = r"""
(function () {
  const episodes = JSON.parse(document.getElementById('episodes-data').textContent);
  const builds = JSON.parse(document.getElementById('builds-order').textContent);
  const byCell = new Map();
  for (const ep of episodes) {
    const key = ep.task + '\u0000' + ep.seed;
    if (!byCell.has(key)) byCell.set(key, []);
    byCell.get(key).push(ep);
  }
  const cells = Array.from(byCell.keys());
  const body = document.body;
  const counts = { loaded: 0, broken: 0 };
  const SVG = 'http://www.w3.org/2000/svg';

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svgEl(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }
  function watch(img) {
    img.addEventListener('load', () => {
      img.dataset.loaded = '1'; counts.loaded++; body.dataset.imagesLoaded = counts.loaded;
    });
    img.addEventListener('error', () => {
      img.dataset.broken = '1'; counts.broken++; body.dataset.imagesBroken = counts.broken;
    });
  }

  // The action drawn in the screenshot's own pixels; the SVG stretches with the image.
  function drawOverlay(step) {
    const o = step.overlay;
    const unit = Math.max(step.w, step.h) / 100;
    const svg = svgEl('svg', { viewBox: '0 0 ' + step.w + ' ' + step.h, preserveAspectRatio: 'none',
                                class: 'overlay', 'data-kind': o.kind });
    const text = (x, y, s, color) => {
      const t = svgEl('text', { x: x, y: y, 'font-size': unit * 3.2, fill: color, stroke: '#fff',
                                'stroke-width': unit * 0.5, 'paint-order': 'stroke', 'font-weight': 'bold' });
      t.textContent = s; svg.appendChild(t);
    };
    if ((o.kind === 'tap' || o.kind === 'long_press' || o.kind === 'type') && o.x !== undefined) {
      svg.appendChild(svgEl('circle', { cx: o.x, cy: o.y, r: unit * 3, fill: 'rgba(230,40,40,0.35)',
                                        stroke: '#e02020', 'stroke-width': unit * 0.7, class: 'tap' }));
      svg.appendChild(svgEl('circle', { cx: o.x, cy: o.y, r: unit * 0.8, fill: '#e02020' }));
      if (o.kind === 'long_press') svg.appendChild(svgEl('circle', { cx: o.x, cy: o.y, r: unit * 5,
                                        fill: 'none', stroke: '#e02020', 'stroke-dasharray': unit }));
    }
    if ((o.kind === 'swipe' || o.kind === 'scroll') && o.x2 !== undefined) {
      const dx = o.x2 - o.x, dy = o.y2 - o.y, len = Math.hypot(dx, dy) || 1;
      const ux = dx / len, uy = dy / len, head = unit * 4;
      svg.appendChild(svgEl('line', { x1: o.x, y1: o.y, x2: o.x2, y2: o.y2, stroke: '#1e5bd8',
                                      'stroke-width': unit * 1.2, class: 'arrow' }));
      const p = (a) => [o.x2 - ux * head + a * uy * head * 0.6, o.y2 - uy * head - a * ux * head * 0.6];
      const [ax, ay] = p(1), [bx, by] = p(-1);
      const points = `${o.x2},${o.y2} ${ax},${ay} ${bx},${by}`;
      svg.appendChild(svgEl('polygon', { points: points, fill: '#1e5bd8' }));
    }
    if (o.kind === 'type') text(unit * 3, step.h - unit * 6, '\u2328 ' + o.label.slice(5), '#1e5bd8');
    if (o.kind === 'done') text(unit * 3, unit * 8, '\u2714 done', '#1d7a3e');
    if (o.kind === 'infeasible') text(unit * 3, unit * 8, '\u2716 infeasible', '#c0392b');
    if (o.kind === 'answer') text(unit * 3, unit * 8, '\u275d ' + o.label.slice(7), '#1e5bd8');
    if (o.kind === 'invalid') text(unit * 3, unit * 8, '\u26a0 invalid', '#c0392b');
    if (['key', 'open_app', 'wait'].includes(o.kind)) text(unit * 3, step.h - unit * 6, o.label, '#333');
    return svg;
  }

  function zoom(step) {
    let dialog = document.getElementById('zoom');
    if (!dialog) { dialog = el('dialog', { id: 'zoom', class: 'zoom' }); body.appendChild(dialog);
      dialog.addEventListener('click', () => dialog.close()); }
    dialog.replaceChildren();
    const frame = el('div', { class: 'frame' });
    const img = el('img', { src: step.full, alt: 'step ' + step.n });
    watch(img);
    frame.append(img, drawOverlay(step));
    dialog.appendChild(frame);
    dialog.showModal();
  }

  function stepCard(step) {
    const card = el('div', { class: 'step', 'data-step': step.n });
    const shot = el('div', { class: 'shot' });
    if (step.thumb) {
      const img = el('img', { loading: 'lazy', src: step.thumb, alt: 'step ' + step.n,
                              width: 180, height: Math.round(180 * step.h / step.w) });
      watch(img);
      shot.append(img, drawOverlay(step));
      shot.addEventListener('click', () => zoom(step));
    } else {
      shot.append(el('div', { class: 'noshot' }, 'no screenshot'), drawOverlay(step));
    }
    card.appendChild(shot);
    card.appendChild(el('div', { class: 'label' }, step.n + '. ' + step.overlay.label));
    card.appendChild(el('div', { class: step.goal ? 'goal-on' : 'goal-off' },
      'goal after: ' + (step.goal ? 'on' : 'off') + ' \u00b7 ' + step.total_s.toFixed(2) + ' s'));
    const details = el('details');
    details.appendChild(el('summary', {}, 'answer, elements, latency'));
    details.appendChild(el('div', {}, 'raw answer:'));
    details.appendChild(el('pre', { class: 'raw' }, step.raw));
    if (step.invalid) details.appendChild(el('div', { class: 'invalid' }, 'invalid: ' + step.invalid));
    details.appendChild(el('div', {}, 'elements seen (' + step.elements.length + '):'));
    details.appendChild(el('pre', { class: 'elements' }, step.elements.join('\n')));
    const lat = Object.entries(step.latency).map(([k, v]) => k.replace('_s', '') + ' ' + v.toFixed(3) + ' s');
    details.appendChild(el('pre', { class: 'latency' }, lat.join('\n') +
      '\ntokens ' + step.tokens[0] + ' in / ' + step.tokens[1] + ' out'));
    card.appendChild(details);
    return card;
  }

  function timeline(ep) {
    const row = el('div', { class: 'timeline', 'data-outcome': ep.outcome });
    row.appendChild(el('span', {}, 'goal:'));
    ep.timeline.forEach((on, i) => {
      const prev = i > 0 ? ep.timeline[i - 1] : false;
      const tick = el('span', { class: 'tick', 'data-index': i, 'data-goal': on ? 'on' : 'off' },
                      i === 0 ? 'start' : i);
      if (on && i === ep.timeline.indexOf(true)) tick.dataset.mark = 'reached';
      if (!on && prev) tick.dataset.mark = 'undone';
      tick.title = (i === 0 ? 'before step 1' : 'after step ' + i) + ': goal ' + (on ? 'on' : 'off') +
                   (tick.dataset.mark ? ' (' + tick.dataset.mark + ')' : '');
      row.appendChild(tick);
    });
    let said = '\u2192 said ' + ep.said + ' at step ' + ep.said_at;
    const judged = ep.answer_correct ? 'right' : 'wrong';
    if (ep.answer !== undefined) said += ': "' + ep.answer + '" (' + judged + ')';
    if (ep.said) row.appendChild(el('span', { class: 'said' }, said));
    return row;
  }

  function episodeView(ep) {
    const box = el('section', { class: 'episode', 'data-build': ep.build, 'data-task': ep.task,
                                'data-seed': ep.seed, 'data-outcome': ep.outcome });
    const head = el('header');
    head.append(el('strong', {}, ep.build), el('span', { class: 'outcome o-' + ep.outcome }, ep.outcome),
                el('span', {}, ep.steps.length + ' steps'));
    if (ep.kind === 'probe') {
      box.dataset.kind = 'probe';
      const what = 'navigation probe: the same seed with done taken away, ended when the goal held';
      head.append(el('em', {}, what));
    }
    if (ep.attempt > 1) head.append(el('span', {}, 'attempt ' + ep.attempt));
    const params = Object.entries(ep.params || {}).map(([k, v]) => k + '=' + v).join(', ');
    if (params) head.append(el('span', {}, params));
    if (ep.error) head.append(el('span', { class: 'error' }, 'error: ' + ep.error));
    box.append(head, timeline(ep));
    const strip = el('div', { class: 'strip' });
    for (const step of ep.steps) strip.appendChild(stepCard(step));
    box.appendChild(strip);
    return box;
  }

  // The address says what is shown (#task=…&seed=…&outcome=…), so a view can be shared as a link.
  let only = null;
  function hashParams() { return new URLSearchParams(location.hash.slice(1)); }
  function fromHash() {
    const params = hashParams();
    return (params.get('task') || '') + '\u0000' + (params.get('seed') || '');
  }
  // An outcome filter keeps the matrix cells (and the previous / next walk) that have an episode ending so.
  const has = (key, outcome) => byCell.get(key).some((ep) => ep.outcome === outcome);
  const kept = () => cells.filter((key) => only === null || has(key, only));

  function show(key) {
    if (!byCell.has(key)) key = kept()[0] || cells[0];
    if (key === undefined) return;
    const [task, seed] = key.split('\u0000');
    // Each build's navigation probe (stopping taken away) right after its ordinary episode of the same seed.
    const order = (ep) => builds.indexOf(ep.build) * 2 + (ep.kind === 'probe' ? 1 : 0);
    const eps = byCell.get(key).slice().sort((a, b) => order(a) - order(b));
    const viewer = document.getElementById('viewer');
    viewer.replaceChildren();
    viewer.dataset.task = task; viewer.dataset.seed = seed;
    viewer.appendChild(el('h3', {}, task + ' \u00b7 seed ' + seed));
    for (const ep of eps) viewer.appendChild(episodeView(ep));
    document.querySelectorAll('#matrix td.cell').forEach((td) => {
      td.classList.toggle('current', td.dataset.task === task && td.dataset.seed === seed);
    });
    let hash = '#task=' + encodeURIComponent(task) + '&seed=' + encodeURIComponent(seed);
    if (only !== null) hash += '&outcome=' + encodeURIComponent(only);
    if (location.hash !== hash) history.replaceState(null, '', hash);
  }

  function filter(outcome) {
    only = outcome;
    document.body.dataset.filter = only || '';
    document.querySelectorAll('button.filter').forEach((b) => {
      b.classList.toggle('off', only !== null && b.dataset.outcome !== only);
    });
    document.querySelectorAll('#matrix td.cell').forEach((td) => {
      td.classList.toggle('dim', only !== null && !td.dataset.outcomes.split(' ').includes(only));
    });
    const walk = kept();
    show(walk.includes(fromHash()) || !walk.length ? fromHash() : walk[0]);
  }

  document.querySelectorAll('#matrix td.cell').forEach((td) => {
    td.addEventListener('click', () => {
      show(td.dataset.task + '\u0000' + td.dataset.seed);
      document.getElementById('viewer').scrollIntoView();
    });
  });
  document.querySelectorAll('button.filter').forEach((button) => {
    const outcome = button.dataset.outcome;
    button.addEventListener('click', () => filter(only === outcome ? null : outcome));
  });
  const step = (d) => () => {
    const walk = kept();
    if (!walk.length) return;
    const here = walk.indexOf(fromHash());
    show(walk[here < 0 ? 0 : (here + d + walk.length) % walk.length]);
  };
  document.getElementById('prev').addEventListener('click', step(-1));
  document.getElementById('next').addEventListener('click', step(1));
  document.addEventListener('keydown', (event) => {
    if (event.target instanceof HTMLInputElement || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === 'ArrowLeft') step(-1)();
    if (event.key === 'ArrowRight') step(1)();
  });
  window.addEventListener('hashchange', () => show(fromHash()));
  body.dataset.imagesLoaded = 0; body.dataset.imagesBroken = 0;
  filter(hashParams().get('outcome'));
  body.dataset.viewerReady = '1';
})();
"""
