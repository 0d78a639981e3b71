// The migrate command against a real PostgreSQL that is not up yet: with --wait it retries until the
// server answers (a pod starting together with its database), without it it fails at once.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { startPostgres, databaseEnv } from '@suite/kit/testing'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))

function migrate (url, ...args) {
  const child = spawn(process.execPath, [entry, 'migrate', ...args], { env: { PATH: process.env.PATH, ...databaseEnv(url), PG_CONNECT_TIMEOUT_MS: '500' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { out += d })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, exited, out: () => out }
}

test('migrate --wait: PostgreSQL down at first, the schema is applied as soon as it is up', async () => {
  const server = await startPostgres()
  try {
    await server.stop({ keepData: true })
    const run = migrate(server.url, '--wait', '60')
    await sleep(2500)
    assert.equal(run.child.exitCode, null, `still waiting: ${run.out()}`)
    assert.match(run.out(), /waiting up to 60 s for PostgreSQL/)
    await server.start()
    assert.equal(await run.exited, 0, run.out())
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    try {
      const { rows } = await client.query("SELECT to_regclass('fixture_items') IS NOT NULL AS migrated")
      assert.equal(rows[0].migrated, true)
    } finally { await client.end() }

    await server.stop({ keepData: true })
    const now = migrate(server.url)
    assert.notEqual(await now.exited, 0, 'without --wait a database that is down fails the command at once')
  } finally {
    await server.start().catch(() => {})
    await server.stop()
  }
})

test('migrate --wait also waits while the database host does not resolve yet, then fails naming it', async () => {
  const started = Date.now()
  const run = migrate('postgres://postgres@db-not-created-yet.invalid:5432/postgres', '--wait', '2')
  assert.notEqual(await run.exited, 0)
  assert.ok(Date.now() - started >= 1500, `gave up after ${Date.now() - started} ms: ${run.out()}`)
  assert.match(run.out(), /waiting up to 2 s for PostgreSQL/)
  assert.match(run.out(), /db-not-created-yet\.invalid/)
})
