// An empty PGlite cluster, as the tarball PGlite.create({ loadDataDir }) starts from, made once per
// PGlite version in a process of its own. Why: initdb grows PGlite's WebAssembly memory, and
// WebAssembly memory never shrinks, so a launcher that ran initdb itself held that for as long as the
// suite ran; one that loads the finished cluster does not (docs/decisions/0012-pglite-for-npm-start.md).
//   node scripts/start/pglite-datadir.js OUT   (what emptyDataDir runs: writes the tarball to OUT)
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const self = fileURLToPath(import.meta.url)
// PGlite resolves to its dist/index.js: its package.json is one folder up.
const pglitePackage = new URL('../package.json', import.meta.resolve('@electric-sql/pglite'))
const version = JSON.parse(readFileSync(pglitePackage, 'utf8')).version
const cacheDir = fileURLToPath(new URL('../../.data/', import.meta.url))

/**
 * The tarball of an empty cluster for this PGlite version, as a Blob: from .data/ when an earlier
 * start made it, else made now by a child process and kept there (written whole, then renamed into
 * place, so a start cut short never leaves a half file to load). `fresh`: make it again.
 */
export function emptyDataDir ({ fresh = false } = {}) {
  const file = `${cacheDir}pglite-${version}-empty.tar.gz`
  if (fresh || !existsSync(file)) {
    mkdirSync(cacheDir, { recursive: true })
    const partial = `${file}.${process.pid}.partial`
    const made = spawnSync(process.execPath, [self, partial], { stdio: ['ignore', 'ignore', 'inherit'] })
    if (made.status !== 0) {
      rmSync(partial, { force: true })
      throw new Error(`initdb of the embedded PostgreSQL failed (${made.signal ?? `exit ${made.status}`})`)
    }
    renameSync(partial, file)
  }
  return new Blob([readFileSync(file)])
}

if (process.argv[1] === self) {
  const { PGlite } = await import('@electric-sql/pglite')
  const db = await PGlite.create()
  const tarball = await db.dumpDataDir('gzip')
  await db.close()
  writeFileSync(process.argv[2], Buffer.from(await tarball.arrayBuffer()))
}
