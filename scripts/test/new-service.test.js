// CONTRIBUTING.md's "Adding a service", followed as written in a copy of the repository: its
// commands make a throwaway service; then the copy's charts render it (Deployment, Service,
// ServiceMonitor, its Ingress path, its TestRun), skaffold builds it, the services dashboard selects
// it by job, it is lint-clean, it starts under its own cli.js on a real PostgreSQL and its own test
// passes.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import {
  copyFileSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { startService, send, get } from '@suite/kit/testing'
import { createDatabase } from '@suite/kit/testing/env'
import { parse, requireTools, template, umbrella } from '../../charts/test/lib.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const NAME = 'reviews' // the doc's example
const copy = mkdtempSync(join(tmpdir(), 'suite-new-service-'))
after(() => rmSync(copy, { recursive: true, force: true }))

function sh (cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: copy, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 300_000 })
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stdout}${r.stderr}${r.error ?? ''}`)
  return r.stdout
}

test('Adding a service, as CONTRIBUTING.md says: the charts render it, skaffold builds it, it starts and ' +
  'passes its test', { timeout: 600_000 }, async () => {
  requireTools()
  // The working tree as git sees it (tracked and new files, nothing ignored); node_modules shared.
  const files = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: root, encoding: 'utf8' }).stdout.split('\0').filter(Boolean)
  for (const f of files) {
    mkdirSync(dirname(join(copy, f)), { recursive: true })
    // a symbolic link (charts/loadtest/scripts) is copied as a link
    if (lstatSync(join(root, f)).isSymbolicLink()) symlinkSync(readlinkSync(join(root, f)), join(copy, f))
    else copyFileSync(join(root, f), join(copy, f))
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'))

  const doc = readFileSync(join(root, 'CONTRIBUTING.md'), 'utf8')
  const block = /## Adding a service[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc)?.[1]
  assert.ok(block, 'CONTRIBUTING.md has the sh block of "Adding a service"')
  const commands = block.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
  assert.deepEqual(commands, [
    `npm run new-service -- --name ${NAME}`, 'npm install', 'npm run generate', 'npm test'
  ], 'the steps this test follows')
  for (const command of commands) {
    // npm install would write into the shared node_modules (the new workspace needs nothing new:
    // @suite/kit resolves from there); npm test is this whole suite: the service's own test runs below.
    if (command === 'npm install' || command === 'npm test') continue
    sh('npm', command.split(' ').slice(1))
  }
  assert.equal(spawnSync(process.execPath, ['scripts/generate.js', '--check'], { cwd: copy }).status, 0,
    'generated files fresh in the copy')

  // The charts of the copy: the umbrella deploys it, routes its path to it, and the TestRun chart runs it.
  const objects = parse(template(umbrella(join(copy, 'charts')),
    ['--set', 'loadtest.enabled=true', '--set', 'loadtest.run=r1']))
  const named = (kind) => objects.filter((o) => o.kind === kind).map((o) => o.metadata.name)
  for (const kind of [
    'Deployment', 'Service', 'ServiceMonitor', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy'
  ]) {
    assert.ok(named(kind).includes(`r-${NAME}`), `${kind} r-${NAME}: ${named(kind).join(', ')}`)
  }
  const paths = objects.find((o) => o.kind === 'Ingress').spec.rules[0].http.paths
  assert.ok(paths.some((p) => p.path.startsWith(`/${NAME}`) && p.backend.service.name === `r-${NAME}`),
    `the Ingress sends /${NAME} to it`)
  const testRun = objects.find((o) => o.kind === 'TestRun')
  assert.ok(testRun?.spec.runner.env.some((e) => e.name === 'SCENARIOS' && e.value.split(',').includes(NAME)),
    'the TestRun runs its scenario')
  const skaffold = parse(readFileSync(join(copy, 'skaffold.yaml'), 'utf8'))[0]
  assert.ok(skaffold.build.artifacts.some((a) => a.image === `suite-${NAME}` && a.docker.buildArgs.SERVICE === NAME),
    'skaffold builds its image')
  assert.ok(`{{.IMAGE_TAG_suite_${NAME}}}` === skaffold.deploy.helm.releases[0].setValueTemplates[`${NAME}.image.tag`],
    'and deploys it')
  const dashboard = readFileSync(join(copy, 'charts/suite/dashboards/services.json'), 'utf8')
  assert.match(dashboard, /label_values\(http_request_duration_seconds_count\{namespace=~\\"\$namespace\\"\}, job\)/,
    'the dashboard lists services by job')
  assert.match(readFileSync(join(copy, 'loadtests/k6/suite.js'), 'utf8'),
    new RegExp(`export \\{ ${NAME} \\} from './${NAME}.js'`), 'the k6 suite runs it')
  // Its scenario, as the k6 script and the local runner read it: a request to its route. (The
  // copy's module, by path.)
  const { scenario } = await import(pathToFileURL(join(copy, 'loadtests/k6/scenarios.js')))
  assert.deepEqual(scenario(NAME).draw(Math.random),
    { method: 'GET', path: `/${NAME}/items`, name: `GET /${NAME}/items` })

  // It starts on a real PostgreSQL: migrate, serve, a write and a read.
  const databaseUrl = await createDatabase(NAME)
  const cli = join(copy, 'services', NAME, 'src', 'cli.js')
  sh(process.execPath, [cli, 'migrate'], { DATABASE_URL: databaseUrl })
  const svc = await startService({ entry: cli, env: { DATABASE_URL: databaseUrl, WORKERS: '1' } })
  try {
    const created = await send(svc.url, 'POST', `/${NAME}/items`, { name: 'first' })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assert.deepEqual((await get(svc.url, `/${NAME}/items/${created.body.id}`)).body, created.body)
  } finally {
    await svc.stop()
  }
  // Lint-clean as written, as npm test's ESLint wants every file.
  sh(process.execPath, [join(copy, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', `services/${NAME}`,
    `loadtests/k6/${NAME}.js`, 'services/list.js', 'loadtests/k6/services.js', 'loadtests/k6/suite.js'])
  // Its own test, as npm test runs it.
  sh(process.execPath, ['--test', '--test-force-exit', `services/${NAME}/test/`])
})
