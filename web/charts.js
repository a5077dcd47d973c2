/* charts.js — what every Chart.js chart of the page shares: the line options (themed axes, legend without the
 * faint series) and the tooltip that lists every visible series at the pointer's x, each at full precision.
 *
 * The 'everySeries' interaction mode picks, for each visible dataset that is not faint (a raw or per-seed
 * curve) or a band, the point nearest the pointer's x, so the tooltip never comes up blank between points and
 * never shows just one series. Values print with String(v): every digit the server sent.
 */
'use strict';

import { $, css, fmtInt } from './util.js';

export function chartsAvailable() { return typeof window.Chart === 'function'; }

export function fmtTokens(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return +(v / 1e9).toFixed(2) + 'B';
  if (a >= 1e6) return +(v / 1e6).toFixed(2) + 'M';
  if (a >= 1e3) return +(v / 1e3).toFixed(1) + 'K';
  return String(v);
}
export function lineOptions(xTitle, yTitle) {
  const fg = css('--muted'), grid = css('--grid');
  return {
    animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
    interaction: { mode: 'everySeries', intersect: false },
    scales: {
      x: { type: 'linear', title: { display: true, text: xTitle, color: fg }, grid: { color: grid },
        ticks: Object.assign({ color: fg, maxRotation: 0 }, xTitle === 'tokens' ? { callback: fmtTokens } : {}) },
      y: { type: 'linear', title: { display: true, text: yTitle, color: fg }, ticks: { color: fg }, grid: { color: grid } },
    },
    plugins: {
      legend: { labels: { color: fg, usePointStyle: true, pointStyle: 'line', filter: (item, data) => !data.datasets[item.datasetIndex].faint } },
      decimation: { enabled: true, algorithm: 'lttb', samples: 400 },
      tooltip: fullTooltip(xTitle),
    },
    elements: { point: { radius: 0 } },
  };
}

/* An explanation over a chart that has nothing to draw (null: the chart has data). */
export function chartNote(id, text) {
  const el = $('#' + id + '-note');
  if (!el) return;
  el.hidden = !text;
  el.textContent = text || '';
}

/* index of the point of `data` (sorted by x) nearest x */
function nearestIndex(data, x) {
  let lo = 0, hi = data.length - 1;
  if (hi < 0) return -1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (data[mid].x < x) lo = mid; else hi = mid;
  }
  return Math.abs(data[lo].x - x) <= Math.abs(data[hi].x - x) ? lo : hi;
}

function registerEverySeries() {
  if (!chartsAvailable() || Chart.Interaction.modes.everySeries) return;
  Chart.Interaction.modes.everySeries = function (chart, e) {
    const pos = Chart.helpers.getRelativePosition(e, chart);
    const a = chart.chartArea, xs = chart.scales.x;
    if (!a || !xs || pos.x < a.left || pos.x > a.right || pos.y < a.top || pos.y > a.bottom) return [];
    const x = xs.getValueForPixel(pos.x);
    const items = [];
    chart.data.datasets.forEach((ds, i) => {
      if (ds.faint || ds.band || !chart.isDatasetVisible(i) || !ds.data.length || typeof ds.data[0] !== 'object') return;
      const k = nearestIndex(ds.data, x);
      const meta = chart.getDatasetMeta(i);
      if (k >= 0 && meta.data[k]) items.push({ element: meta.data[k], datasetIndex: i, index: k });
    });
    return items;
  };
}

/* tooltip callbacks: the x as the axis shows it, then one line per series, highest value first */
export function fullTooltip(xTitle) {
  return {
    filter: (item) => !item.dataset.faint && !item.dataset.band,
    itemSort: (a, b) => b.parsed.y - a.parsed.y,
    callbacks: {
      title: (items) => (items.length ? xTitle + ' ' + (xTitle === 'tokens' ? fmtInt(items[0].parsed.x) : String(items[0].parsed.x)) : ''),
      label: (item) => {
        const ds = item.dataset, p = ds.data[item.dataIndex] || {};
        return ds.label + ': ' + String(item.parsed.y) + (p.raw != null && p.raw !== item.parsed.y ? ' (raw ' + String(p.raw) + ')' : '') +
          (p.sd != null ? ' ± ' + String(p.sd) + ' (seed std, n=' + p.n + ')' : '');
      },
    },
  };
}
registerEverySeries();

/* Every chart's text (ticks, axis titles, legend, tooltip) at 12 px: Chart.js draws it at that CSS size whatever the
 * canvas's width, so a 420 px screen reads it as a wide one does (web/test_browser:narrow_420_delta_and_text_sizes). */
const CHART_FONT_PX = 12;
if (chartsAvailable()) Chart.defaults.font.size = CHART_FONT_PX;
