// Plots as hand-written SVG (no dependency): line charts on linear or log axes, bar charts with
// error bars, side by side in one document. A chart is { width, body }.
const H = 340
const M = { left: 70, right: 32, top: 56, bottom: 56 }
export const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f']

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const text = (x, y, s, attrs = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`
export const fmt = (v) => (Math.abs(v) >= 100 || Number.isInteger(v)
  ? Math.round(v).toLocaleString('en-US')
  : Number(v.toPrecision(2)).toString())

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

/** Title, legend row, grid, axes; `x` may have no ticks (bars). Returns the SVG lines. */
function frame ({ width, title, xLabel, yLabel, x, y, legend = [] }) {
  const right = width - M.right
  const out = [text(width / 2, 22, title, 'text-anchor="middle" font-weight="bold"')]
  // The legend is one row between the title and the plot: it never covers a line or a bar.
  let lx = M.left
  for (const s of legend) {
    out.push(`<rect x="${lx}" y="32" width="10" height="10" fill="${s.color}"/>`, text(lx + 14, 41, s.name))
    lx += 34 + 7 * s.name.length // about 7 px a character at 12 px
  }
  for (const t of x?.ticks ?? []) {
    out.push(`<line x1="${x.f(t)}" y1="${M.top}" x2="${x.f(t)}" y2="${H - M.bottom}" stroke="#eee"/>`,
      text(x.f(t), H - M.bottom + 16, fmt(t), 'text-anchor="middle"'))
  }
  for (const t of y.ticks) {
    out.push(`<line x1="${M.left}" y1="${y.f(t)}" x2="${right}" y2="${y.f(t)}" stroke="#eee"/>`,
      text(M.left - 6, y.f(t) + 4, fmt(t), 'text-anchor="end"'))
  }
  out.push(
    `<rect x="${M.left}" y="${M.top}" width="${right - M.left}" height="${H - M.top - M.bottom}" ` +
    'fill="none" stroke="#999"/>',
    text(width / 2, H - 10, xLabel, 'text-anchor="middle"'),
    text(16, H / 2, yLabel, `text-anchor="middle" transform="rotate(-90 16 ${H / 2})"`)
  )
  return out
}

// A dashed reference line across the plot, labelled at its left end.
const reference = (width, y, r) => `<line x1="${M.left}" y1="${y.f(r.y)}" x2="${width - M.right}" y2="${y.f(r.y)}" ` +
  'stroke="#d62728" stroke-dasharray="6 4"/>' +
  text(M.left + 6, y.f(r.y) - 4, r.label, 'fill="#d62728"')

/**
 * series: [{ name, points: [[x, y], …], color?, dashed? }]; hlines: [{ y, label }] (e.g. an SLO);
 * marks: [{ x, y, label }] (red rings, e.g. the breaking point).
 */
export function lineChart ({
  title, xLabel, yLabel, series, logX = false, logY = false, hlines = [], marks = [], width = 560
}) {
  const shown = (v) => Number.isFinite(v) && (!logY || v > 0)
  const pts = series.flatMap((s) => s.points).filter(([, v]) => shown(v))
  const ys = [...pts.map(([, v]) => v), ...hlines.map((h) => h.y)]
  const x = scale(Math.min(...pts.map(([v]) => v)), Math.max(...pts.map(([v]) => v)), M.left, width - M.right, logX)
  const y = scale(Math.max(Math.min(...ys), logY ? 1e-3 : -Infinity), Math.max(...ys), H - M.bottom, M.top, logY)
  const colored = series.map((s, i) => ({ ...s, color: s.color ?? COLORS[i % COLORS.length] }))
  const out = frame({ width, title, xLabel, yLabel, x, y, legend: colored })
  out.push(...hlines.map((h) => reference(width, y, h)))
  for (const s of colored) {
    const p = s.points.filter(([, v]) => shown(v)).map(([a, b]) => [x.f(a).toFixed(1), y.f(b).toFixed(1)])
    const dash = s.dashed ? ' stroke-dasharray="4 4"' : ''
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${dash} points="${p.join(' ')}"/>`,
      ...p.map(([cx, cy]) => `<circle cx="${cx}" cy="${cy}" r="3" fill="${s.color}"/>`))
  }
  for (const m of marks) {
    out.push(`<circle cx="${x.f(m.x)}" cy="${y.f(m.y)}" r="8" fill="none" stroke="#d62728" stroke-width="2"/>`,
      text(x.f(m.x) - 12, y.f(m.y) + 4, m.label, 'text-anchor="end" fill="#d62728"'))
  }
  return { width, body: out.join('\n') }
}

/**
 * bars: [{ label, value, error, color }] — error draws ± whiskers; the label goes under the bar;
 * legend: [{ name, color }] for what the colours mean; ref: { y, label }, a dashed line.
 */
export function barChart ({ title, xLabel = '', yLabel, bars, legend = [], ref }) {
  const width = Math.max(560, M.left + M.right + 56 * bars.length)
  const y = scale(0, Math.max(...bars.map((b) => b.value + (b.error || 0)), ref?.y ?? 0), H - M.bottom, M.top, false)
  const slot = (width - M.left - M.right) / bars.length
  const out = frame({ width, title, xLabel, yLabel, y, legend })
  bars.forEach((b, i) => {
    const cx = M.left + slot * (i + 0.5)
    const w = slot * 0.6
    const rect = `<rect class="bar" x="${(cx - w / 2).toFixed(1)}" y="${y.f(b.value).toFixed(1)}" ` +
      `width="${w.toFixed(1)}" height="${(y.f(0) - y.f(b.value)).toFixed(1)}" fill="${b.color ?? COLORS[0]}"/>`
    out.push(rect, text(cx, H - M.bottom + 16, b.label, 'text-anchor="middle"'))
    if (b.error) {
      const [lo, hi] = [y.f(b.value - b.error), y.f(b.value + b.error)]
      out.push(`<path d="M${cx} ${lo}V${hi}M${cx - 5} ${lo}h10M${cx - 5} ${hi}h10" stroke="#333"/>`)
    }
  })
  if (ref) out.push(reference(width, y, ref))
  return { width, body: out.join('\n') }
}

/** Charts side by side in one SVG document. */
export function svgDocument (charts) {
  let x = 0
  const body = charts.map((c) => {
    const g = `<g transform="translate(${x},0)">\n${c.body}\n</g>`
    x += c.width
    return g
  }).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${x}" height="${H}" viewBox="0 0 ${x} ${H}" ` +
    `font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n${body}\n</svg>\n`
}
