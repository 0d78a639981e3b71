// An external PostgreSQL behind a private CA, as the charts connect to it with
// global.externalDatabase.caSecret: DATABASE_URL with sslmode=verify-full&sslrootcert=<the CA file>.
// A real server with TLS on, certificates made by openssl for the test: the right CA connects, another
// CA or a host name the certificate does not carry is refused, in one line.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import { mkdtemp, rm, chown, chmod, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startPostgres } from '@suite/kit/testing'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))
let dir, server

const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pg-tls-'))
  // Two CAs; the server's certificate, for the name localhost, signed by the first.
  for (const ca of ['ca', 'other-ca']) {
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=suite test ${ca}`,
      '-keyout', `${ca}.key`, '-out', `${ca}.crt`)
  }
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost',
    '-keyout', 'server.key', '-out', 'server.csr')
  await writeFile(join(dir, 'server.ext'), 'subjectAltName=DNS:localhost\n')
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-days', '2', '-extfile', 'server.ext', '-out', 'server.crt')
  // PostgreSQL wants its key readable by itself only (it runs as the postgres user under root).
  await chmod(join(dir, 'server.key'), 0o600)
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']))
    const gid = Number(execFileSync('id', ['-g', 'postgres']))
    await chown(dir, uid, gid)
    for (const f of ['server.key', 'server.crt']) await chown(join(dir, f), uid, gid)
  }
  server = await startPostgres({
    settings: { ssl: 'on', ssl_cert_file: join(dir, 'server.crt'), ssl_key_file: join(dir, 'server.key') }
  })
})

after(async () => {
  await server?.stop()
  await rm(dir, { recursive: true, force: true })
})

/** `fixture migrate` against the server as `host`, verify-full against `ca`; resolves to { code, out }. */
function migrate (host, ca) {
  const u = new URL(server.url)
  const env = {
    PATH: process.env.PATH,
    DATABASE_URL: `postgres://postgres@${host}:${u.port}/postgres?sslmode=verify-full&sslrootcert=${join(dir, ca)}`,
    DATABASE_PASSWORD: decodeURIComponent(u.password)
  }
  const child = spawn(process.execPath, [entry, 'migrate'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })))
}

test('verify-full against the private CA connects; the CA file is what the chart mounts', async () => {
  assert.match(await readFile(join(dir, 'ca.crt'), 'utf8'), /^-----BEGIN CERTIFICATE-----/)
  const r = await migrate('localhost', 'ca.crt')
  assert.equal(r.code, 0, r.out)
  assert.match(r.out, /schema up to date/)
})

test('verify-full refuses another CA, and a host name the certificate does not carry, in one line', async () => {
  const other = await migrate('localhost', 'other-ca.crt')
  assert.equal(other.code, 1, other.out)
  assert.match(
    other.out,
    /^fixture migrate: cannot connect to PostgreSQL: .*(self[- ]signed|unable to verify|certificate)/m
  )
  assert.doesNotMatch(other.out, /^\s+at /m)
  const wrongName = await migrate('127.0.0.1', 'ca.crt')
  assert.equal(wrongName.code, 1, wrongName.out)
  assert.match(wrongName.out, /^fixture migrate: cannot connect to PostgreSQL: .*(altnames|Hostname|IP: 127\.0\.0\.1)/m)
})
