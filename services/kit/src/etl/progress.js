// Progress of one file (or one generated table): a redrawn bar on a terminal, a plain line every few seconds otherwise.
const BAR = 28

export function createProgress ({ stream = process.stderr, tty = Boolean(stream.isTTY), label, totalBytes }) {
  const started = Date.now()
  let lastDraw = 0
  let lastLine = started
  const mb = (b) => (b / 1e6).toFixed(1)
  let total = totalBytes
  const describe = (rows, bytes) => {
    const secs = Math.max((Date.now() - started) / 1000, 0.001)
    const rate = bytes / secs
    const eta = rate > 0 ? Math.max(0, (total - bytes) / rate) : 0
    const pct = total ? Math.min(100, (100 * bytes) / total) : 100
    const rowRate = Math.round(rows / secs).toLocaleString('en-US')
    return { pct, text: `${rowRate} rows/s  ${mb(rate)} MB/s  ${mb(bytes)}/${mb(total)} MB  ETA ${eta.toFixed(0)} s` }
  }
  return {
    /** `estimatedTotal`: for a source whose size is known only as it goes (a generator). */
    update (rows, bytes, estimatedTotal = total) {
      total = estimatedTotal
      const now = Date.now()
      if (tty) {
        if (now - lastDraw < 100) return
        lastDraw = now
        const { pct, text } = describe(rows, bytes)
        const filled = Math.round((pct / 100) * BAR)
        const bar = `${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}`
        stream.write(`\r${label.padEnd(14)} [${bar}] ${pct.toFixed(0).padStart(3)}%  ${text}\x1b[K`)
      } else if (now - lastLine >= 5000) {
        lastLine = now
        const { pct, text } = describe(rows, bytes)
        stream.write(`${label}: ${pct.toFixed(0)}%  ${rows.toLocaleString('en-US')} rows  ${text}\n`)
      }
    },
    done (rows, bytes) {
      const { text } = describe(rows, bytes)
      const secs = ((Date.now() - started) / 1000).toFixed(1)
      const rates = text.replace(/ {2}ETA.*/, '')
      const line = `${label}: ${rows.toLocaleString('en-US')} rows in ${secs} s  (${rates})`
      stream.write(`${tty ? '\r' : ''}${line}${tty ? '\x1b[K' : ''}\n`)
    }
  }
}
