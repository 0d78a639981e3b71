// `npm run bench -- --report FILE`: the run's own output written as a Markdown report, with the machine
// it ran on and a chart (FILE's name with .svg) of each case's RPS against bare Fastify. The docs show
// the last report; its figures are never copied by hand.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { availableParallelism, release, totalmem } from 'node:os'
import { basename, dirname, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const GUIDE = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url))

/** This machine, in one line: CPU model and count, memory, kernel, Node. */
export function machine () {
  let model = 'unknown CPU'
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? model
  } catch {}
  return `${model}, ${availableParallelism()} CPUs, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ` +
    `Linux ${release()}, Node ${process.version}`
}

const escape = (s) =>
  String(s).replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c])

/**
 * A horizontal bar chart of each full-speed case's RPS over its service's bare Fastify baseline (the
 * "RPS / baseline" column), a line at 1.0. Fixed-rate cases and the baselines themselves have no bar.
 */
export function chart (rows) {
  const base = (r) => {
    const b = rows.filter((x) => x.baseline && x.service === r.service && x.connections === r.connections)
    return b.reduce((a, x) => a + x.rps, 0) / b.length
  }
  const bars = rows.filter((r) => !r.baseline && !r.rate && r.rps > 0)
    .map((r) => ({ label: `${r.service}: ${r.case} (${r.connections})`, value: r.rps / base(r) }))
    .filter((b) => Number.isFinite(b.value))
  const labelWidth = 430
  const width = 300
  const row = 18
  const max = Math.max(1.2, ...bars.map((b) => b.value))
  const x = (v) => labelWidth + (v / max) * width
  const height = bars.length * row + 40
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + width + 60}" height="${height}" ` +
    'font-family="sans-serif" font-size="11">',
    `<text x="${labelWidth}" y="14">RPS / bare Fastify (1.0 = as fast as an empty Fastify route)</text>`
  ]
  bars.forEach((b, i) => {
    const y = 24 + i * row
    const barWidth = (x(b.value) - labelWidth).toFixed(1)
    const fill = b.value >= 1 ? '#2b8a3e' : '#1c7ed6'
    out.push(`<text x="${labelWidth - 6}" y="${y + 12}" text-anchor="end">${escape(b.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 2}" width="${barWidth}" height="${row - 5}" fill="${fill}"/>`,
      `<text x="${(x(b.value) + 4).toFixed(1)}" y="${y + 12}">${b.value.toFixed(2)}</text>`)
  })
  const atOne = x(1).toFixed(1)
  out.push(
    `<line x1="${atOne}" y1="20" x2="${atOne}" y2="${height - 10}" stroke="#444" stroke-dasharray="3,3"/>`,
    '</svg>'
  )
  return `${out.join('\n')}\n`
}

/** Writes FILE (the report) and FILE's .svg (the chart), each whole or not at all. */
export function writeReport (file, { command, lines, rows, date = new Date() }) {
  const svg = file.replace(/\.md$/, '') + '.svg'
  const text = [
    '# Benchmark report',
    '',
    `Written by \`${command}\` on ${date.toISOString().slice(0, 10)}, on ${machine()}. How to read it:`,
    `[docs/benchmarks.md](${relative(dirname(file), GUIDE)}).`,
    '',
    `![RPS of each case over bare Fastify](${basename(svg)})`,
    '',
    ...lines
  ].join('\n')
  mkdirSync(dirname(file), { recursive: true })
  for (const [path, content] of [[svg, chart(rows)], [file, `${text}\n`]]) {
    writeFileSync(`${path}.tmp`, content)
    renameSync(`${path}.tmp`, path)
  }
  return [file, svg]
}
