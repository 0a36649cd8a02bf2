//! The self-contained HTML page: inline CSS, inline SVG (from [`super::layout`]), the trace as
//! inline JSON, and a small inline script that steps through it. No network access, no external
//! scripts or fonts.
//!
//! Fragments: `#step=N` opens the page at step `N` (0 = before the forward pass; forward steps
//! come first, then backward steps); `#autotest` makes the page click its own Next button through
//! every step and write the gradients it then *displays* (read back from the table's text) as
//! JSON into `<pre id="autotest-result">`, for the browser test.

use super::layout::{esc, layout, svg};
use super::trace::Trace;

const CSS: &str = r#"
:root { --fg:#1d2330; --muted:#667085; --line:#c9ced8; --leaf:#dbe9ff; --const:#eef0f3; --op:#ffffff; --fw:#2563eb; --bw:#c0392b; --ok:#12805c; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--fg); margin: 0; background: #f7f8fa; }
header { padding: 10px 18px; background: #fff; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap; align-items: center; gap: 10px 22px; }
h1 { font-size: 18px; margin: 0; }
pre.src { margin: 0; padding: 4px 8px; background: #f1f3f7; border-radius: 4px; font-size: 12px; max-width: 720px; white-space: pre-wrap; }
.controls button { font-size: 14px; padding: 4px 12px; margin-right: 4px; border: 1px solid var(--line); background: #fff; border-radius: 4px; cursor: pointer; }
.controls button:disabled { opacity: .4; cursor: default; }
#phase { font-weight: 600; }
#phase.fw { color: var(--fw); } #phase.bw { color: var(--bw); }
main { padding: 10px 18px; display: grid; grid-template-columns: minmax(0, 1fr); gap: 12px; }
#graphbox { overflow: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; max-height: 430px; }
svg .edge { fill: none; stroke: #9aa3b2; stroke-width: 1.3; }
svg .edge.active { stroke: var(--fw); stroke-width: 2.6; }
svg .edge.active.bw { stroke: var(--bw); }
svg .node rect { stroke: #8a93a3; stroke-width: 1.2; fill: var(--op); }
svg .node.leaf rect { fill: var(--leaf); }
svg .node.const rect { fill: var(--const); stroke-dasharray: 3 2; }
svg .node.pending rect { fill: #fafafa; stroke: #d5d9e0; }
svg .node.pending text { fill: #aab; }
svg .node.gdone rect { stroke: var(--bw); stroke-width: 2; }
svg .node.cur rect { stroke: var(--fw); stroke-width: 3.5; fill: #e8f0ff; }
svg .node.cur.bw rect { stroke: var(--bw); fill: #ffe9e6; }
svg .node.target rect { stroke: var(--bw); stroke-width: 2.5; stroke-dasharray: 5 2; }
svg text { font: 12px system-ui, "DejaVu Sans", sans-serif; text-anchor: middle; }
svg text.t2 { font-size: 10px; fill: var(--muted); }
#detail { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
#detail h2 { font-size: 15px; margin: 0 0 6px; }
.rule { font-family: "DejaVu Sans Mono", monospace; background: #fff5f3; border-left: 3px solid var(--bw); padding: 4px 8px; margin: 6px 0; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { border: 1px solid #e3e6eb; padding: 3px 7px; text-align: left; vertical-align: top; font-size: 13px; }
th { background: #f1f3f7; }
td.v, td.grad, td.fd { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
tr.cur td { background: #e8f0ff; } tr.cur.bw td { background: #ffe9e6; }
tr.pending td.v { color: #bbb; }
td.grad.partial { color: #a06b00; }
td.grad.complete { color: var(--bw); }
.ok { color: var(--ok); } .bad { color: #b00; font-weight: 700; }
.muted { color: var(--muted); }
details pre { font-size: 12px; background: #fff; border: 1px solid var(--line); padding: 8px; overflow: auto; }
#autotest-result { display: none; }
"#;

const JS: &str = r#"
(function () {
  const T = JSON.parse(document.getElementById('trace').textContent);
  const F = T.forward.length, B = T.backward.length, N = F + B;
  const byId = T.nodes;
  const tracked = n => n.kind !== 'const';
  let step = 0;
  const $ = id => document.getElementById(id);
  function fmt(x) {
    if (x === 0) return '0';
    if (!isFinite(x)) return String(x);
    let s = x.toPrecision(6);
    if (s.indexOf('e') >= 0) { const [m, e] = s.split('e'); return m.replace(/\.?0+$/, '') + 'e' + e; }
    return s.indexOf('.') >= 0 ? s.replace(/\.?0+$/, '') : s;
  }
  function tensor(vals, shape) {
    const num = v => '<span class="num">' + fmt(v) + '</span>';
    if (shape.length === 0) return num(vals[0]);
    if (shape.length === 1) return '[' + vals.map(num).join(', ') + ']';
    const cols = shape[shape.length - 1], rows = [];
    for (let r = 0; r * cols < vals.length; r++) rows.push('[' + vals.slice(r * cols, (r + 1) * cols).map(num).join(', ') + ']');
    return '[' + rows.join(',<br>&nbsp;') + ']';
  }
  function opText(n) {
    if (n.kind !== 'op') return n.label;
    return n.label + ' = ' + n.op + '(' + n.inputs.map(i => byId[i].label).join(', ') + ')';
  }
  function maxErr(a, b) { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; }
  function agree(a, b) {
    if (!b) return '<span class="muted">(no estimate: relu kink within ε)</span>';
    const e = maxErr(a, b);
    return '<span class="' + (e < 1e-5 ? 'ok' : 'bad') + '">max |analytic − estimate| = ' + e.toExponential(1) + '</span>';
  }
  // The state after `s` steps, recomputed from scratch: which values exist and the gradient
  // accumulated so far in every node (the sum of the contributions that have arrived).
  function state(s) {
    const valued = byId.map(n => n.kind !== 'op');
    for (let k = 0; k < Math.min(s, F); k++) valued[T.forward[k]] = true;
    const acc = byId.map(n => null);
    const done = byId.map(n => false);
    const nb = Math.max(0, s - F);
    if (nb > 0) acc[T.output] = T.backward[0].g.slice();
    for (let b = 0; b < nb; b++) {
      const st = T.backward[b];
      done[st.node] = true;
      for (const e of st.edges) {
        if (!acc[e.input]) acc[e.input] = new Array(e.contrib.length).fill(0);
        for (let i = 0; i < e.contrib.length; i++) acc[e.input][i] += e.contrib[i];
      }
    }
    if (nb === B) byId.forEach(n => { if (n.kind === 'leaf') done[n.id] = true; });
    return { valued, acc, done, nb };
  }
  function render() {
    const st = state(step);
    const fw = step >= 1 && step <= F, bw = step > F;
    const cur = fw ? T.forward[step - 1] : bw ? T.backward[step - F - 1].node : -1;
    $('phase').className = fw ? 'fw' : bw ? 'bw' : '';
    $('phase').textContent = step === 0 ? 'Start (step 0 of ' + N + ')' : fw ? 'Forward ' + step + ' / ' + F + ' (step ' + step + ' of ' + N + ')'
      : 'Backward ' + (step - F) + ' / ' + B + ' (step ' + step + ' of ' + N + ')';
    $('prev').disabled = $('first').disabled = step === 0;
    $('next').disabled = $('last').disabled = step === N;
    // Graph.
    document.querySelectorAll('#graph .node').forEach(g => {
      const id = +g.dataset.id;
      g.classList.toggle('pending', !st.valued[id]);
      g.classList.toggle('cur', id === cur);
      g.classList.toggle('bw', id === cur && bw);
      g.classList.toggle('gdone', bw && st.done[id]);
      g.classList.toggle('target', false);
    });
    document.querySelectorAll('#graph .edge').forEach(e => e.classList.remove('active', 'bw'));
    if (cur >= 0) {
      byId[cur].inputs.forEach((j, slot) => {
        // Backward sends nothing to constants: only edges into inputs that take a gradient light up.
        if (bw && !tracked(byId[j])) return;
        const e = $('e' + j + '_' + cur + '_' + slot);
        if (e) { e.classList.add('active'); if (bw) e.classList.add('bw'); }
        if (bw && tracked(byId[j])) { const g = $('n' + j); if (g) g.classList.add('target'); }
      });
      const g = $('n' + cur);
      if (g && g.scrollIntoView) g.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    }
    // Detail.
    let h = '';
    if (step === 0) {
      h = '<h2>Before the forward pass</h2><p>Leaves (blue) hold the values we differentiate with respect to; constants (grey, dashed) take no gradient. ' +
        'Press <b>Next</b> or → to run the ops in the order the engine recorded them (' + F + ' ops), then the backward pass (' + B + ' rules, last recorded first).</p>';
    } else if (fw) {
      const n = byId[cur];
      h = '<h2>Forward ' + step + ': ' + opText(n) + '</h2><table><tr><th>input</th><th>shape</th><th>value</th></tr>' +
        n.inputs.map(j => '<tr><td>' + byId[j].label + '</td><td>' + JSON.stringify(byId[j].shape) + '</td><td class="v">' + tensor(byId[j].value, byId[j].shape) + '</td></tr>').join('') +
        '<tr><th>' + n.label + '</th><td>' + JSON.stringify(n.shape) + '</td><td class="v">' + tensor(n.value, n.shape) + '</td></tr></table>' +
        '<p class="muted">The engine records this op with its inputs (and, for rules that need it, its output) so the backward pass can apply its rule later.</p>';
    } else {
      const b = step - F - 1, s = T.backward[b], n = byId[cur];
      h = '<h2>Backward ' + (b + 1) + ': ' + opText(n) + '</h2>' +
        '<div class="rule">' + s.rule + '</div>' +
        '<table><tr><th></th><th>analytic (chi engine)</th><th>central difference, ε = ' + T.eps + '</th></tr>' +
        '<tr><td>incoming gradient g = ∂L/∂' + n.label + (b === 0 ? ' (the seed)' : '') + '</td><td class="grad">' + tensor(s.g, n.shape) + '</td><td class="fd">' +
        tensor(s.g_fd, n.shape) + '<br>' + agree(s.g, s.g_fd) + '</td></tr></table>' +
        '<h2 style="margin-top:8px">Contributions sent to the inputs</h2><table><tr><th>input</th><th>contribution (the rule applied to g)</th><th>central difference of the local rule</th><th>sum so far in the input</th></tr>' +
        (s.edges.length === 0 ? '<tr><td colspan="4" class="muted">no input requires grad</td></tr>' : '') +
        s.edges.map(e => {
          const x = byId[e.input];
          return '<tr><td>' + x.label + ' (argument ' + (e.slot + 1) + ')</td><td class="v">' + tensor(e.contrib, x.shape) + '</td><td class="fd">' +
            (e.fd ? tensor(e.fd, x.shape) + '<br>' : '') + agree(e.contrib, e.fd) + '</td><td class="v">' + tensor(st.acc[e.input], x.shape) + '</td></tr>';
        }).join('') + '</table>';
    }
    $('detail').innerHTML = h;
    // Table.
    const rows = byId.map(n => {
      const a = st.acc[n.id];
      const gcls = st.done[n.id] ? 'complete' : 'partial';
      const grad = tracked(n) && a ? '<td class="grad ' + gcls + '">' + tensor(a, n.shape) + '</td>' : '<td class="grad"></td>';
      const fd = tracked(n) && st.done[n.id] && n.grad_fd ? '<td class="fd">' + tensor(n.grad_fd, n.shape) + '</td>' : '<td class="fd"></td>';
      const cls = (st.valued[n.id] ? '' : 'pending') + (n.id === cur ? ' cur' + (bw ? ' bw' : '') : '');
      return '<tr data-label="' + n.label + '" class="' + cls + '"><td>' + n.label + (n.name && n.name !== n.label ? ' <span class="muted">(' + n.name + ')</span>' : '') +
        '</td><td>' + (n.kind === 'op' ? n.op + '(' + n.inputs.map(i => byId[i].label).join(', ') + ')' : n.kind) + '</td><td>' + JSON.stringify(n.shape) +
        '</td><td class="v">' + (st.valued[n.id] ? tensor(n.value, n.shape) : '·') + '</td>' + grad + fd + '</tr>';
    });
    $('rows').innerHTML = rows.join('');
  }
  function go(s) { step = Math.max(0, Math.min(N, s)); render(); }
  $('first').onclick = () => go(0);
  $('prev').onclick = () => go(step - 1);
  $('next').onclick = () => go(step + 1);
  $('last').onclick = () => go(N);
  document.addEventListener('keydown', ev => {
    if (ev.key === 'ArrowRight') { go(step + 1); ev.preventDefault(); }
    else if (ev.key === 'ArrowLeft') { go(step - 1); ev.preventDefault(); }
    else if (ev.key === 'Home') go(0);
    else if (ev.key === 'End') go(N);
  });
  const hash = location.hash || '';
  const m = /step=(\d+)/.exec(hash);
  go(m ? +m[1] : 0);
  if (hash.indexOf('autotest') >= 0) {
    // Click through every step like a student would, then read back what the page shows.
    go(0);
    let clicks = 0;
    while (!$('next').disabled && clicks < 100000) { $('next').click(); clicks++; }
    const grads = {};
    document.querySelectorAll('#rows tr').forEach(tr => {
      const cell = tr.querySelector('td.grad');
      const nums = cell ? Array.from(cell.querySelectorAll('.num')).map(s => parseFloat(s.textContent)) : [];
      if (nums.length) grads[tr.dataset.label] = nums;
    });
    const out = { clicks: clicks, forward: F, backward: B, grads: grads };
    $('autotest-result').textContent = JSON.stringify(out);
    document.title = 'autotest done';
  }
})();
"#;

/// The page for a trace (lays it out first).
pub fn render(mut t: Trace) -> String {
    let (w, h) = layout(&mut t);
    let graph = svg(&t, w, h);
    let json = serde_json::to_string(&t).expect("a trace serialises").replace("</", "<\\/");
    let max_err = t.max_fd_error;
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>chi teach: {title}</title>
<style>{CSS}</style></head>
<body>
<header>
  <h1>chi teach: {title}</h1>
  <pre class="src">{source}</pre>
  <div>loss = <b>{loss}</b> · {nops} ops on the tape · every gradient checked by central differences (largest gap {max_err:.1e})</div>
  <div class="controls"><button id="first" title="Home">First</button><button id="prev" title="←">◀ Prev</button><button id="next" title="→">Next ▶</button><button id="last" title="End">Last</button>
  <span id="phase"></span> <span class="muted">(keys ← →)</span></div>
</header>
<main>
  <div id="graphbox">{graph}</div>
  <div id="detail"></div>
  <table><thead><tr><th>node</th><th>op</th><th>shape</th><th>value</th><th>gradient ∂L/∂node (accumulated so far)</th><th>central difference</th></tr></thead><tbody id="rows"></tbody></table>
  <details><summary>The engine's tape listing</summary><pre>{listing}</pre></details>
  <pre id="autotest-result"></pre>
</main>
<script type="application/json" id="trace">{json}</script>
<script>{JS}</script>
</body></html>
"#,
        title = esc(&t.title),
        source = esc(&t.source),
        loss = t.loss,
        nops = t.forward.len(),
        listing = esc(&t.listing),
    )
}
