// The image (services/Dockerfile, .dockerignore) and skaffold.yaml, validated against skaffold's own
// JSON schema for its apiVersion, taken from the skaffold module source (go mod download).
import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import Ajv from 'ajv'
import { SERVICES, parse, requireTools, root, run } from './lib.js'

before(requireTools)

const SKAFFOLD_MODULE = 'github.com/GoogleContainerTools/skaffold/v2@v2.16.1'

test('one Dockerfile for every service: ARG SERVICE, production dependencies, numeric user, node as PID 1', () => {
  for (const s of SERVICES) {
    assert.ok(!existsSync(join(root, 'services', s, 'Dockerfile')), `services/${s}/Dockerfile should be gone`)
  }
  const dockerfile = readFileSync(join(root, 'services', 'Dockerfile'), 'utf8')
  const lines = dockerfile.split('\n').filter((l) => l && !l.startsWith('#'))
  assert.match(dockerfile, /^ARG NODE_IMAGE=node:24-/m)
  assert.match(dockerfile, /^ARG SERVICE$/m)
  assert.match(dockerfile, /npm ci --omit=dev .*--workspace "services\/\$\{SERVICE\}"/)
  const final = lines.slice(lines.findLastIndex((l) => l.startsWith('FROM ')))
  assert.ok(final.includes('USER 10001:10001'), 'the final stage runs as uid 10001')
  assert.ok(final.every((l) => !/^RUN .*(chown|chmod)/.test(l)), 'nothing made writable')
  const entrypoint = final.find((l) => l.startsWith('ENTRYPOINT '))
  assert.deepEqual(JSON.parse(entrypoint.slice('ENTRYPOINT '.length)),
    ['node', '--max-semi-space-size=4', '--no-allocation-site-pretenuring', '/app/cli.js'], 'exec form: node is PID 1')
  assert.ok(final.some((l) => l.includes('ln -s "services/${SERVICE}/src/cli.js" /app/cli.js')),
    'the entry point links to the service')
})

// .dockerignore as Docker reads it (moby's patternmatcher): patterns in order, the last one that
// matches a path or one of its parent folders decides. The cluster e2e checks buildah's reading: the
// image holds exactly these files.
function dockerignore () {
  const rules = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
  const toRegExp = (p) => {
    const glob = p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*\//g, '(.*/)?').replace(/\*\*/g, '\0')
      .replace(/\*/g, '[^/]*').replace(/\0/g, '.*')
    return new RegExp(`^${glob}$`)
  }
  const compiled = rules.map((r) => ({ keep: r.startsWith('!'), re: toRegExp(r.replace(/^!/, '')) }))
  const selfOrParents = (path) => path.replace(/\/$/, '').split('/')
    .map((_, i, parts) => parts.slice(0, i + 1).join('/'))
  return (path) => compiled.reduce((sent, { keep, re }) =>
    (selfOrParents(path).some((p) => re.test(p)) ? keep : sent), true)
}

function files (dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    if (f === 'node_modules') return [relative(root, p) + '/']
    return statSync(p).isDirectory() ? files(p) : [relative(root, p)]
  })
}

test('.dockerignore sends the services\' runtime files and manifests, no tests, data or node_modules', () => {
  const sent = dockerignore()
  for (const f of ['package.json', 'package-lock.json']) assert.ok(sent(f), f)
  for (const f of files(join(root, 'services'))) {
    // services/list.js: a service's data commands are made from its entry there.
    const runtime = f === 'services/list.js' || /^services\/[^/]+\/(package\.json|(src|migrations|etl)\/.+)$/.test(f)
    assert.equal(sent(f), runtime, `${f} ${runtime ? 'must' : 'must not'} be in the build context`)
  }
  for (const f of [
    'charts/suite/values.yaml', 'loadtests/k6/lib.js', 'scripts/test.js', 'services/Dockerfile', '.data/x.csv',
    'node_modules/'
  ]) assert.ok(!sent(f), f)
  // the image leaves services/kit/testing out: nothing a service runs may import it
  const imports = files(join(root, 'services')).filter((f) => /\/(src|etl)\/.+\.js$/.test(f))
    .filter((f) => /['"][^'"]*\/testing[/'"]/.test(readFileSync(join(root, f), 'utf8')))
  assert.deepEqual(imports, [])
})

function skaffoldSchema () {
  const r = run('go', ['mod', 'download', '-json', SKAFFOLD_MODULE], { cwd: tmpdir() })
  assert.equal(r.code, 0, `go mod download ${SKAFFOLD_MODULE} (needs Go and the module proxy): ${r.stderr}`)
  const { Dir } = JSON.parse(r.stdout)
  return (version) =>
    JSON.parse(readFileSync(join(Dir, 'docs-v2', 'content', 'en', 'schemas', `${version}.json`), 'utf8'))
}

// The JSON patches of skaffold profiles (add and replace are all skaffold.yaml uses).
function applyPatches (config, patches) {
  const out = structuredClone(config)
  for (const { op, path, value } of patches) {
    const keys = path.split('/').slice(1)
    const last = keys.pop()
    const parent = keys.reduce((o, k) => {
      assert.ok(o && k in o, `patch path ${path} does not exist`)
      return o[k]
    }, out)
    if (Array.isArray(parent)) {
      if (op === 'add') parent.splice(last === '-' ? parent.length : Number(last), 0, value)
      else parent[Number(last)] = value
    } else {
      assert.ok(op === 'add' || last in parent, `patch path ${path} does not exist`)
      parent[last] = value
    }
  }
  return out
}

test('skaffold.yaml is valid against skaffold\'s schema, with each profile applied', () => {
  const config = parse(readFileSync(join(root, 'skaffold.yaml'), 'utf8'))[0]
  const version = config.apiVersion.replace('skaffold/', '')
  const validate = new Ajv({ strict: false, allErrors: true, validateFormats: false })
    .compile(skaffoldSchema()(version))
  assert.ok(validate(config), JSON.stringify(validate.errors, null, 2))
  assert.deepEqual(config.profiles.map((p) => p.name),
    ['dev', 'monitoring', 'monitoring-kind', 'loadtest', 'loadtest-kind', 'kind', 'lab'])
  for (const profile of config.profiles) {
    const patched = applyPatches({ ...config, build: profile.build ?? config.build }, profile.patches ?? [])
    delete patched.profiles
    assert.ok(validate(patched), `profile ${profile.name}: ${JSON.stringify(validate.errors, null, 2)}`)
    for (const hook of Object.values(patched.deploy.helm.hooks ?? {}).flat()) {
      const [program, file] = hook.host.command
      if (program === 'node') assert.ok(existsSync(join(root, file)), `profile ${profile.name}: hook ${file}`)
    }
    for (const release of patched.deploy.helm.releases) {
      for (const f of release.valuesFiles ?? []) assert.ok(existsSync(join(root, f)), `profile ${profile.name}: ${f}`)
      for (const dep of release.dependsOn ?? []) {
        assert.ok(patched.deploy.helm.releases.some((r) => r.name === dep), `profile ${profile.name}: dependsOn ${dep}`)
      }
    }
  }
})

test('skaffold builds every service from the one Dockerfile and deploys them through the umbrella', () => {
  const config = parse(readFileSync(join(root, 'skaffold.yaml'), 'utf8'))[0]
  const services = readdirSync(join(root, 'services'))
    .filter((s) => s !== 'kit' && existsSync(join(root, 'services', s, 'src', 'cli.js')))
  assert.deepEqual(services.sort(), [...SERVICES].sort())
  assert.deepEqual(config.build.artifacts.map((a) => [a.image, a.docker.dockerfile, a.docker.buildArgs.SERVICE]),
    SERVICES.map((s) => [`suite-${s}`, 'services/Dockerfile', s]))
  const [suite] = config.deploy.helm.releases
  assert.equal(suite.chartPath, 'charts/suite')
  for (const s of SERVICES) {
    assert.equal(suite.setValueTemplates[`${s}.image.repository`], `{{.IMAGE_REPO_suite_${s}}}`)
    assert.equal(suite.setValueTemplates[`${s}.image.tag`], `{{.IMAGE_TAG_suite_${s}}}`)
    assert.equal(suite.setValueTemplates[`${s}.image.digest`], `{{.IMAGE_DIGEST_suite_${s}}}`)
  }
})

test('skaffold dev: a saved .js of a service or the kit lands where the dev-loop pods run it from; ' +
  'anything else rebuilds', () => {
  const config = parse(readFileSync(join(root, 'skaffold.yaml'), 'utf8'))[0]
  const lab = config.profiles.find((p) => p.name === 'lab')
  for (const artifacts of [config.build.artifacts, lab.build.artifacts]) {
    for (const [i, s] of SERVICES.entries()) {
      // skaffold copies a matched file to dest + its path from the context: /app/services/<s>/src/…,
      // the folder charts/service's devLoop puts under node --watch-path.
      assert.deepEqual(artifacts[i].sync.manual, [
        { src: `services/${s}/src/**/*.js`, dest: '/app' },
        { src: 'services/kit/src/**/*.js', dest: '/app' }
      ])
      // …and then rewrites the file the service watches, in place.
      assert.match(artifacts[i].sync.hooks.after[0].container.command.join(' '),
        /^node -e .*writeFileSync\('\/app\/services\/\.restart'/)
    }
  }
  const deployment = run('helm', [
    'template', 'x', join(root, 'charts', 'service'), '--set', 'devLoop.enabled=true',
    '--show-only', 'templates/deployment.yaml'
  ]).stdout
  const pod = parse(deployment)[0].spec.template.spec
  assert.deepEqual(pod.containers[0].command, ['node', '--watch-path=/app/services/.restart', '/app/cli.js'])
  // A restart waits for nothing but requests in flight: the pod stays its clients' endpoint.
  const env = Object.fromEntries(pod.containers[0].env.map((e) => [e.name, e.value]))
  assert.deepEqual([env.SHUTDOWN_DELAY_MS, env.SHUTDOWN_IDLE_MS, env.SHUTDOWN_GRACE_MS], ['0', '0', '1000'])
  assert.match(pod.initContainers.find((c) => c.name === 'code').command.join(' '),
    /cpSync\('\/app\/services', '\/code'.*writeFileSync\('\/code\/\.restart'/)
  // The lab profile's builder: buildah on the same Dockerfile, rebuilt on what the image is made of.
  for (const [i, s] of SERVICES.entries()) {
    const { custom } = lab.build.artifacts[i]
    assert.equal(lab.build.artifacts[i].image, `suite-${s}`)
    assert.match(custom.buildCommand, /^bash scripts\/buildah-build\.sh /)
    for (const p of [
      'package.json', 'package-lock.json', 'services/Dockerfile', 'services/kit/**', `services/${s}/**`
    ]) {
      assert.ok(custom.dependencies.paths.includes(p), `${s}: rebuilt on ${p}`)
    }
  }
  assert.equal(lab.build.local.push, true)
})

test('README.md\'s lab recipe runs the lab profile against the registry k8s/registry.yaml publishes', async () => {
  process.env.E2E_DEV_REGISTRY ??= 'localhost:30500'
  const { readmeRecipe } = await import('../../k8s/e2e/devloop.js')
  const recipe = readmeRecipe()
  const service = parse(readFileSync(join(root, 'k8s', 'registry.yaml'), 'utf8')).find((o) => o.kind === 'Service')
  const registry = ['--default-repo', `localhost:${service.spec.ports[0].nodePort}`]
  // skaffold run takes the dev profile by name (its seed, the routes' data); skaffold dev by itself.
  assert.deepEqual(recipe.run, ['-p', 'dev,lab', ...registry])
  // skaffold dev acts 200 ms after the last save, not its default 1 s.
  assert.deepEqual(recipe.dev, ['-p', 'lab', ...registry, '-i', '200'])
  assert.deepEqual(recipe.delete, ['-p', 'lab', ...registry])
  const kind = parse(readFileSync(join(root, 'k8s', 'kind.yaml'), 'utf8'))[0]
  assert.ok(
    kind.nodes[0].extraPortMappings.some((m) =>
      m.containerPort === service.spec.ports[0].nodePort && m.hostPort === m.containerPort),
    'kind maps the registry\'s NodePort to this machine'
  )
  assert.throws(() => readmeRecipe('## Dev loop\n\nOn the lab cluster\n\n```sh\nskaffold dev -p lab\n```\n'),
    /no "skaffold run" line/)
})
