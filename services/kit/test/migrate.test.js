// The migrate command against a real PostgreSQL that is not up yet: with --wait it retries until the
// server answers (a pod starting together with its database), without it it fails at once. And
// under its own session settings: a slow migration, a wait for the lock of another migrate run or
// for a table a long reader holds, are bounded by --wait, not by the service's statement timeout.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { mkdtemp, rm, writeFile, copyFile, readdir, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { migrate as migrateIn } from '@suite/kit'
import { startPostgres, databaseEnv } from '@suite/kit/testing'
import { createDatabase } from '@suite/kit/testing/env'
import { NAMES } from '../../list.js'

const entry = fileURLToPath(new URL('./fixture/cli.js', import.meta.url))
const fixtureMigration = fileURLToPath(new URL('./fixture/migrations/001_fixture.sql', import.meta.url))

function migrate (url, ...args) {
  const env = typeof args.at(-1) === 'object' ? args.pop() : {}
  const child = spawn(process.execPath, [entry, 'migrate', ...args], {
    env: { PATH: process.env.PATH, ...databaseEnv(url), PG_CONNECT_TIMEOUT_MS: '500', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
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

/**
 * A fresh database, a folder of migrations (the fixture's 001, then `files`: name → SQL) and a
 * client of its own; runs body({ url, dir, client, run(...args) }) where run is migrate with the
 * folder and the service's statement timeout set to 300 ms.
 */
async function withMigrations (files, body) {
  const url = await createDatabase('migrate')
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'))
  const client = new pg.Client({ connectionString: url })
  try {
    await copyFile(fixtureMigration, join(dir, '001_fixture.sql'))
    for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql)
    await client.connect()
    const run = (...args) => migrate(url, ...args, { FIXTURE_MIGRATIONS: dir, PG_STATEMENT_TIMEOUT_MS: '300' })
    await body({ url, dir, client, run })
  } finally {
    await client.end()
    await rm(dir, { recursive: true, force: true })
  }
}

const LOCK_KEY = 7_310_001 // migrate.js's
const oneLine = (out, pattern) => {
  assert.match(out, pattern)
  assert.doesNotMatch(out, /^\s+at /m, 'no stack trace')
}

test('migrate: a migration longer than the service\'s statement timeout runs to its end', async () => {
  await withMigrations({
    '002_slow.sql': 'SELECT pg_sleep(1.2); CREATE TABLE slow_done (id int)'
  }, async ({ client, run }) => {
    const r = run()
    assert.equal(await r.exited, 0, r.out())
    const { rows } = await client.query(
      "SELECT to_regclass('slow_done') IS NOT NULL AS done, (SELECT count(*)::int FROM schema_migrations) AS n"
    )
    assert.deepEqual(rows[0], { done: true, n: 2 })
  })
})

test('migrate --wait: waits for another run\'s advisory lock past the statement timeout, ' +
  'and gives up after --wait in one line', async () => {
  await withMigrations({}, async ({ client, run }) => {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY])
    const waiting = run('--wait', '20')
    await sleep(1500)
    assert.equal(waiting.child.exitCode, null, `still waiting for the lock: ${waiting.out()}`)
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY])
    assert.equal(await waiting.exited, 0, waiting.out())

    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY])
    const started = Date.now()
    const givingUp = run() // --wait 0: still at least 5 s for a lock
    assert.equal(await givingUp.exited, 1, givingUp.out())
    assert.ok(Date.now() - started >= 4500, `gave up after ${Date.now() - started} ms`)
    oneLine(
      givingUp.out(),
      /^fixture migrate: another migrate run has held the migration lock for more than 5 s; it may still be running/m
    )
  })
})

test('migrate: one transaction per file; a failing one is rolled back and named in one line, ' +
  'the ones before it stay', async () => {
  await withMigrations({
    '002_ok.sql': 'CREATE TABLE two (id int)',
    '003_bad.sql': 'CREATE TABLE three (id int); SELECT 1 / 0',
    '004_later.sql': 'CREATE TABLE four (id int)'
  }, async ({ client, run }) => {
    const r = run()
    assert.equal(await r.exited, 1, r.out())
    oneLine(r.out(), /^fixture migrate: migration 003_bad\.sql failed, rolled back: division by zero$/m)
    const { rows } = await client.query(
      "SELECT to_regclass('two') IS NOT NULL AS two, to_regclass('three') IS NOT NULL AS three,\n" +
      "      to_regclass('four') IS NOT NULL AS four, " +
      '(SELECT array_agg(version ORDER BY version) FROM schema_migrations) AS versions'
    )
    assert.deepEqual(rows[0], { two: true, three: false, four: false, versions: ['001_fixture', '002_ok'] })
  })
})

test('migrate: a migration behind a long reader\'s table lock waits up to --wait (at least 5 s), ' +
  'then fails in one line, rolled back', async () => {
  await withMigrations({
    '002_alter.sql': 'ALTER TABLE fixture_items ADD COLUMN note text'
  }, async ({ url, client, run }) => {
    const first = migrate(url, { FIXTURE_MIGRATIONS: fileURLToPath(new URL('./fixture/migrations/', import.meta.url)) })
    assert.equal(await first.exited, 0, first.out()) // 001 only
    await client.query('BEGIN')
    await client.query('SELECT count(*) FROM fixture_items') // the long reader
    const r = run('--wait', '2')
    assert.equal(await r.exited, 1, r.out())
    oneLine(r.out(), new RegExp(
      '^fixture migrate: migration 002_alter\\.sql failed, rolled back: ' +
      'waited more than 5 s for a lock: a long transaction holds a table it changes$',
      'm'
    ))
    await client.query('COMMIT')
    const again = run('--wait', '2')
    assert.equal(await again.exited, 0, again.out())
    const { rows } = await client.query('SELECT count(*)::int AS n FROM information_schema.columns ' +
      "WHERE table_name = 'fixture_items' AND column_name = 'note'")
    assert.equal(rows[0].n, 1)
  })
})

// Versions are keyed by service: services share one database (the charts' default), and each may
// have a 001_init.sql.
test('migrate: two services with a 001_init.sql of the same name in one database each apply their own', async () => {
  const url = await createDatabase('migrate_keyed')
  const client = new pg.Client({ connectionString: url })
  const dirs = []
  try {
    await client.connect()
    for (const name of ['alpha', 'beta']) {
      const dir = await mkdtemp(join(tmpdir(), `migrations-${name}-`))
      dirs.push(dir)
      await writeFile(join(dir, '001_init.sql'), `CREATE TABLE ${name}_items (id int)`)
      assert.deepEqual(await migrateIn(client, { name, migrations: dir }), ['001_init'], `${name}'s 001_init applied`)
    }
    const { rows } = await client.query(
      "SELECT to_regclass('alpha_items') IS NOT NULL AS alpha, to_regclass('beta_items') IS NOT NULL AS beta,\n" +
      "      (SELECT array_agg(service || '/' || version ORDER BY service) FROM schema_migrations) AS versions"
    )
    assert.deepEqual(rows[0], { alpha: true, beta: true, versions: ['alpha/001_init', 'beta/001_init'] })
    assert.deepEqual(await migrateIn(client, { name: 'beta', migrations: dirs[1] }), [], 'applied once')
  } finally {
    await client.end()
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  }
})

test('migrate: a database migrated before versions were keyed by service upgrades in place, ' +
  'nothing applied twice', async () => {
  const url = await createDatabase('migrate_upgrade')
  const client = new pg.Client({ connectionString: url })
  // By path: the list names the services; each definition holds its migrations.
  const services = await Promise.all(NAMES.map(async (name) => (await import(`../../${name}/src/service.js`)).default))
  try {
    await client.connect()
    // What the previous migrate left: schema_migrations keyed by bare version, every service's files applied.
    await client.query(
      'CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())'
    )
    const legacy = []
    for (const service of services) {
      const dir = fileURLToPath(service.migrations)
      for (const file of (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort()) {
        await client.query(await readFile(join(dir, file), 'utf8'))
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file.replace(/\.sql$/, '')])
        legacy.push(`${service.name}/${file.replace(/\.sql$/, '')}`)
      }
    }
    // A row no service here claims (another service's, not yet upgraded) stays as it was.
    await client.query("INSERT INTO schema_migrations (version) VALUES ('001_someone_else')")
    for (const service of services) {
      assert.deepEqual(await migrateIn(client, service), [], `${service.name}: nothing applied again`)
    }
    const { rows } = await client.query("SELECT coalesce(service, '?') || '/' || version AS v FROM schema_migrations")
    assert.deepEqual(
      rows.map((r) => r.v).sort(),
      [...legacy, '?/001_someone_else'].sort(),
      'each row keyed by its service'
    )

    // The upgraded table takes new versions, per service.
    const dir = await mkdtemp(join(tmpdir(), 'migrations-later-'))
    try {
      const last = services.at(-1)
      for (const file of await readdir(fileURLToPath(last.migrations))) {
        await copyFile(join(fileURLToPath(last.migrations), file), join(dir, file))
      }
      await writeFile(join(dir, '999_later.sql'), 'CREATE TABLE upgraded_later (id int)')
      assert.deepEqual(await migrateIn(client, { name: last.name, migrations: dir }), ['999_later'])
    } finally { await rm(dir, { recursive: true, force: true }) }
  } finally {
    await client.end()
  }
})

// A data load's memory is mostly the modules its process carries (services/README.md, load): every
// service's `migrate` loads its definition and the kit's commands, and none of what only serving
// needs. A resolve hook records each module the process loads.
test('migrate loads none of what only serve needs: ' +
  'Fastify, ioredis, prom-client, the OpenTelemetry SDK, the routes', async () => {
  const url = await createDatabase('migrate_light')
  const dir = await mkdtemp(join(tmpdir(), 'suite-modules-'))
  const hook = join(dir, 'hook.mjs')
  await writeFile(hook, `import { registerHooks } from 'node:module'
const seen = new Set()
registerHooks({ resolve (specifier, context, next) { const r = next(specifier, context); seen.add(r.url); return r } })
process.on('exit', () => process.stderr.write('MODULES ' + JSON.stringify([...seen]) + '\\n'))
`)
  try {
    for (const name of NAMES) {
      const child = spawn(process.execPath, [
        '--import', hook, fileURLToPath(new URL(`../../${name}/src/cli.js`, import.meta.url)), 'migrate'
      ], { env: { PATH: process.env.PATH, ...databaseEnv(url) }, stdio: ['ignore', 'ignore', 'pipe'] })
      let err = ''
      child.stderr.on('data', (d) => { err += d })
      const [code] = await once(child, 'close') // after its stderr is read to the end
      assert.equal(code, 0, err)
      const modules = JSON.parse(/^MODULES (.*)$/m.exec(err)[1])
      assert.ok(
        modules.some((m) => m.includes('/node_modules/pg/')),
        `${name}: the hook saw pg load (${modules.length} modules)`
      )
      const heavyModule =
        /\/node_modules\/(fastify|@fastify|ioredis|prom-client|@opentelemetry\/(sdk-trace|resources|core|exporter))/
      const heavy = modules.filter((m) => heavyModule.test(m) || m.endsWith('/src/routes.js'))
      assert.deepEqual(heavy, [], `${name} migrate`)
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
