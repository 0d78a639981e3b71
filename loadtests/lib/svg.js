// Plots as hand-written SVG (no dependency): line charts on linear or log axes, bar charts with
// error bars, side by side in one document.
const W = 560
const H = 340
const M = { left: 70, right: 32, top: 40, bottom: 56 }
export const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f']

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const text = (x, y, s, attrs = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`
export const fmt = (v) => (Math.abs(v) >= 100 || Number.isInteger(v) ? Math.round(v).toLocaleString('en-US') : Number(v.toPrecision(2)).toString())

/** A scale from [lo, hi] to pixels [a, b], with its tick values. */
function scale (lo, hi, a, b, log) {
  if (log) {
    const l0 = Math.floor(Math.log10(lo))
    const l1 = Math.ceil(Math.log10(hi))
    const f = (v) => a + (Math.log10(v) - l0) / Math.max(l1 - l0, 1) * (b - a)
    return { f, ticks: Array.from({ length: l1 - l0 + 1 }, (_, i) => 10 ** (l0 + i)) }
  }
  const raw = (hi - lo) / 5 || 1
  const mag = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw)
  const top = Math.ceil(hi / step) * step || step
  const bottom = Math.min(0, Math.floor(lo / step) * step)
  const f = (v) => a + (v - bottom) / (top - bottom) * (b - a)
  return { f, ticks: Array.from({ length: Math.round((top - bottom) / step) + 1 }, (_, i) => bottom + i * step) }
}

function frame (title, xLabel, yLabel, x, y) {
  const out = [text(W / 2, 22, title, 'text-anchor="middle" font-weight="bold"')]
  for (const t of x.ticks ?? []) {
    out.push(`<line x1="${x.f(t)}" y1="${M.top}" x2="${x.f(t)}" y2="${H - M.bottom}" stroke="#eee"/>`, text(x.f(t), H - M.bottom + 16, fmt(t), 'text-anchor="middle"'))
  }
  for (const t of y.ticks) {
    out.push(`<line x1="${M.left}" y1="${y.f(t)}" x2="${W - M.right}" y2="${y.f(t)}" stroke="#eee"/>`, text(M.left - 6, y.f(t) + 4, fmt(t), 'text-anchor="end"'))
  }
  out.push(
    `<rect x="${M.left}" y="${M.top}" width="${W - M.left - M.right}" height="${H - M.top - M.bottom}" fill="none" stroke="#999"/>`,
    text(W / 2, H - 14, xLabel, 'text-anchor="middle"'),
    text(16, H / 2, yLabel, `text-anchor="middle" transform="rotate(-90 16 ${H / 2})"`)
  )
  return out
}

function legend (series) {
  return series.map((s, i) => `<rect x="${M.left + 10}" y="${M.top + 8 + i * 16}" width="10" height="10" fill="${s.color ?? COLORS[i % COLORS.length]}"/>` +
    text(M.left + 26, M.top + 17 + i * 16, s.name))
}

/**
 * series: [{ name, points: [[x, y], …], color?, dashed? }]; hlines: [{ y, label }] (dashed, e.g. an SLO);
 * marks: [{ x, y, label }] (red rings, e.g. the breaking point).
 */
export function lineChart ({ title, xLabel, yLabel, series, logX = false, logY = false, hlines = [], marks = [] }) {
  const pts = series.flatMap((s) => s.points).filter(([, v]) => Number.isFinite(v) && (!logY || v > 0))
  const xs = pts.map(([v]) => v)
  const ys = [...pts.map(([, v]) => v), ...hlines.map((h) => h.y)]
  const x = scale(Math.min(...xs), Math.max(...xs), M.left, W - M.right, logX)
  const y = scale(Math.max(Math.min(...ys), logY ? 1e-3 : -Infinity), Math.max(...ys), H - M.bottom, M.top, logY)
  const out = frame(title, xLabel, yLabel, x, y)
  for (const h of hlines) {
    out.push(`<line x1="${M.left}" y1="${y.f(h.y)}" x2="${W - M.right}" y2="${y.f(h.y)}" stroke="#d62728" stroke-dasharray="6 4"/>`,
      text(W - M.right - 4, y.f(h.y) - 4, h.label, 'text-anchor="end" fill="#d62728"'))
  }
  series.forEach((s, i) => {
    const c = s.color ?? COLORS[i % COLORS.length]
    const p = s.points.filter(([, v]) => Number.isFinite(v) && (!logY || v > 0)).map(([a, b]) => `${x.f(a).toFixed(1)},${y.f(b).toFixed(1)}`)
    out.push(`<polyline fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="4 4"' : ''} points="${p.join(' ')}"/>`, ...p.map((q) => {
      const [cx, cy] = q.split(',')
      return `<circle cx="${cx}" cy="${cy}" r="3" fill="${c}"/>`
    }))
  })
  for (const m of marks) {
    out.push(`<circle cx="${x.f(m.x)}" cy="${y.f(m.y)}" r="8" fill="none" stroke="#d62728" stroke-width="2"/>`, text(x.f(m.x), y.f(m.y) + 22, m.label, 'text-anchor="middle" fill="#d62728"'))
  }
  out.push(...legend(series))
  return out.join('\n')
}

/** bars: [{ label, value, error }] — error draws ± whiskers; hline: a reference value. */
export function barChart ({ title, yLabel, bars, hline }) {
  const tops = bars.map((b) => b.value + (b.error || 0))
  const y = scale(0, Math.max(...tops, hline?.y ?? 0), H - M.bottom, M.top, false)
  const slot = (W - M.left - M.right) / bars.length
  const out = frame(title, '', yLabel, { ticks: [] }, y)
  bars.forEach((b, i) => {
    const cx = M.left + slot * (i + 0.5)
    const w = slot * 0.6
    out.push(`<rect class="bar" x="${(cx - w / 2).toFixed(1)}" y="${y.f(b.value).toFixed(1)}" width="${w.toFixed(1)}" height="${(y.f(0) - y.f(b.value)).toFixed(1)}" fill="${b.color ?? COLORS[0]}"/>`)
    if (b.error) {
      out.push(`<path d="M${cx} ${y.f(b.value - b.error)}V${y.f(b.value + b.error)}M${cx - 5} ${y.f(b.value - b.error)}h10M${cx - 5} ${y.f(b.value + b.error)}h10" stroke="#333"/>`)
    }
    out.push(text(cx, H - M.bottom + 14, b.label, `text-anchor="end" font-size="10" transform="rotate(-30 ${cx} ${H - M.bottom + 14})"`))
  })
  if (hline) {
    out.push(`<line x1="${M.left}" y1="${y.f(hline.y)}" x2="${W - M.right}" y2="${y.f(hline.y)}" stroke="#d62728" stroke-dasharray="6 4"/>`,
      text(W - M.right - 4, y.f(hline.y) - 4, hline.label, 'text-anchor="end" fill="#d62728"'))
  }
  return out.join('\n')
}

/** Charts side by side in one SVG document. */
export function svgDocument (charts) {
  const body = charts.map((c, i) => `<g transform="translate(${i * W},0)">\n${c}\n</g>`).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W * charts.length}" height="${H}" viewBox="0 0 ${W * charts.length} ${H}" font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n${body}\n</svg>\n`
}
