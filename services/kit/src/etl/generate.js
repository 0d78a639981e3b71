// What every data generator needs: a seeded PRNG, and CSV files written in large chunks with
// backpressure (memory stays flat whatever the row count) together with their manifest — the rows
// written and how many the loader must reject (or repair) by reason, so tests can hold it to that.
import { createWriteStream } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { join } from 'node:path'

const CHUNK = 1 << 20 // characters buffered per file before a write

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. Returns () => [0, 1). */
export function prng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * The output folder of a generator: `files` maps each CSV name to its header line.
 *   out.row(file, line)            adds a line (no newline) and counts it
 *   out.expect(file, reason[, kind = 'rejects' | 'fixes'])   one row the loader must reject / repair
 *   await out.flush()              writes full buffers; call it every few thousand rows
 *   await out.close(meta)          ends the files, writes manifest.json ({ ...meta, files }), returns it
 */
export async function createOutput (dir, files) {
  await mkdir(dir, { recursive: true })
  const open = {}
  const manifest = {}
  for (const [name, header] of Object.entries(files)) {
    open[name] = { stream: createWriteStream(join(dir, name)), buffer: header + '\n' }
    manifest[name] = { rows: 0, rejects: {}, fixes: {} }
  }
  return {
    row (file, line) {
      open[file].buffer += line + '\n'
      manifest[file].rows++
    },
    expect (file, reason, kind = 'rejects') {
      const m = manifest[file][kind]
      m[reason] = (m[reason] ?? 0) + 1
    },
    async flush () {
      for (const f of Object.values(open)) {
        if (f.buffer.length < CHUNK) continue
        const more = f.stream.write(f.buffer)
        f.buffer = ''
        if (!more) await once(f.stream, 'drain')
      }
    },
    async close (meta = {}) {
      for (const f of Object.values(open)) {
        f.stream.end(f.buffer)
        await finished(f.stream)
      }
      const result = { ...meta, files: manifest }
      await writeFile(join(dir, 'manifest.json'), JSON.stringify(result, null, 2) + '\n')
      return result
    }
  }
}
