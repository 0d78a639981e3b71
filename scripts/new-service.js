// `npm run new-service -- --name NAME [--port N]`: a new service that runs, from folder to load test —
// services/NAME (service definition, routes with their schemas, SQL, a migration, a test), its k6
// scenario loadtests/k6/NAME.js, and its entry in services/list.js. Then `npm install` and
// `npm run generate` (CONTRIBUTING.md: Adding a service). It serves one resource, `items`:
//   POST /NAME/items {name} → 201 {id, name}; GET /NAME/items/:id; GET /NAME/items (the first 100)
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { commandLine, UsageError } from '@suite/kit/args'
import { SERVICES } from '../services/list.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const { name, port } = commandLine('new-service', {
  usage: 'npm run new-service -- --name NAME [--port N]   (or node scripts/new-service.js [options])',
  summary: 'Makes a new service that runs, from folder to load test: services/NAME, loadtests/k6/NAME.js, ' +
    'its scenario in loadtests/k6/scenarios.js and its entry in services/list.js. ' +
    'Then npm install and npm run generate (CONTRIBUTING.md: Adding a service).',
  options: {
    name: {
      type: 'string',
      value: 'NAME',
      help: 'the service: lowercase letters and digits (its folder, image, chart alias, Prometheus job)'
    },
    port: { type: 'string', value: 'N', help: 'its port under npm start (default: the next after the last service\'s)' }
  },
  examples: ['npm run new-service -- --name reviews', 'npm run new-service -- --name reviews --port 3010']
}, (values) => {
  const name = values.name
  if (!name) throw new UsageError('--name NAME is required')
  if (!/^[a-z][a-z0-9]*$/.test(name)) {
    throw new UsageError(`--name must be lowercase letters and digits, a letter first (got "${name}")`)
  }
  if (existsSync(join(root, 'services', name)) || SERVICES.some((s) => s.name === name)) {
    throw new UsageError(`--name: ${name} exists already`)
  }
  const port = values.port === undefined ? Math.max(...SERVICES.map((s) => s.port)) + 1 : Number(values.port)
  if (!/^\d+$/.test(values.port ?? '0') || port < 1024 || port > 65535) {
    throw new UsageError(`--port must be a port number from 1024 to 65535 (got "${values.port}")`)
  }
  const taken = SERVICES.find((s) => s.port === port)
  if (taken) throw new UsageError(`--port: ${port} is ${taken.name}'s`)
  return { name, port }
})

const title = name[0].toUpperCase() + name.slice(1)
// A new service starts at the suite's version (generate keeps them equal after).
const suiteVersion = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
const files = {
  [`services/${name}/package.json`]: JSON.stringify({
    name: `@suite/${name}`,
    version: suiteVersion,
    private: true,
    type: 'module',
    description: `The ${name} service`,
    bin: { [name]: './src/cli.js' },
    dependencies: { '@suite/kit': `^${suiteVersion}` }
  }, null, 2) + '\n',

  [`services/${name}/src/cli.js`]: `#!/usr/bin/env node
// ${name} serve | migrate
import { runCli } from '@suite/kit/cli'
import service from './service.js'

await runCli(service, {})
`,

  [`services/${name}/src/service.js`]: `// The ${name} service, as the kit runs it: name, migrations and routes.
import manifest from '../package.json' with { type: 'json' }

// Every cache key starts with this.
export const CACHE_PREFIX = '${name}:'

export default {
  name: '${name}',
  version: manifest.version,
  description: 'The ${name} service.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  // Imported by the instances that serve: the other commands never load the routes.
  routes: new URL('./routes.js', import.meta.url)
}
`,

  [`services/${name}/src/routes.js`]: `import { queryDocument, httpError } from '@suite/kit'
import * as sql from './sql.js'
import * as schemas from './schemas.js'
import { CACHE_PREFIX } from './service.js'

export default async function routes (app) {
  const { pg } = app

  app.get('/${name}/items', { schema: schemas.listItems }, async () => queryDocument(pg, sql.list, []))

  app.get('/${name}/items/:id', { schema: schemas.getItem }, async (request, reply) => {
    const { id } = request.params
    const found = await reply.sendCached(\`\${CACHE_PREFIX}item:\${id}\`, () => queryDocument(pg, sql.item, [id]))
    if (!found) throw httpError(404, \`item \${id} not found\`)
    return reply
  })

  app.post('/${name}/items', { schema: schemas.createItem }, async (request, reply) => {
    const item = await queryDocument(pg, sql.create, [request.body.name])
    return reply.code(201).header('location', \`/${name}/items/\${item.id}\`).send(item)
  })
}
`,

  [`services/${name}/src/schemas.js`]:
    `// JSON schemas of the ${name} routes: request validation, OpenAPI, and the response shapes the tests
// check every answer against.
// Exported: one schema per route, named by its operation (getMenu, postFlows…: every service's
// schemas.js alike); components stay private.
import { errorResponses, id, text } from '@suite/kit'

const tags = ['${name}']
const params = { type: 'object', required: ['id'], properties: { id: id('item id') } }
const item = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name'],
  properties: { id: { type: 'integer' }, name: text({ minLength: 1, maxLength: 200 }) }
}

export const listItems = {
  tags, summary: 'the first 100 items, in id order',
  response: { 200: { type: 'array', maxItems: 100, items: item }, ...errorResponses }
}
export const getItem = {
  tags, summary: 'one item', params,
  response: { 200: item, ...errorResponses }
}
export const createItem = {
  tags, summary: 'create an item (201, Location)',
  body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: item.properties.name } },
  response: { 201: item, ...errorResponses }
}
`,

  [`services/${name}/src/sql.js`]:
    `// One query per request: PostgreSQL builds the answer document; each a prepared statement.

export const list = {
  name: '${name}_list',
  text: \`SELECT coalesce(json_agg(json_build_object('id', i.id, 'name', i.name) ORDER BY i.id), '[]') AS json
    FROM (SELECT id, name FROM ${name}_items ORDER BY id LIMIT 100) i\`
}

export const item = {
  name: '${name}_item',
  text: \`SELECT json_build_object('id', id, 'name', name) AS json FROM ${name}_items WHERE id = $1\`
}

export const create = {
  name: '${name}_create',
  text: \`INSERT INTO ${name}_items (name) VALUES ($1) RETURNING json_build_object('id', id, 'name', name) AS json\`
}
`,

  [`services/${name}/migrations/001_${name}.sql`]:
    `-- The ${name} service's items. Tables carry the service's name: the services share one database.
CREATE TABLE IF NOT EXISTS ${name}_items (
  id   integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  name text NOT NULL
);
`,

  [`services/${name}/test/api.test.js`]:
    `// The ${name} API against a real PostgreSQL: every route, its answers checked against its schema,
// and the error contract of the kit.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { startService, send, get, conforms, checkErrorContract } from '@suite/kit/testing'
import { migratedDatabase } from '@suite/kit/testing/env'
import service from '../src/service.js'
import * as schemas from '../src/schemas.js'

const entry = fileURLToPath(new URL('../src/cli.js', import.meta.url))
let svc

before(async () => {
  svc = await startService({ entry, env: { DATABASE_URL: await migratedDatabase(service), WORKERS: '1' } })
})
after(() => svc?.stop())

test('an item is created, read by id and listed', async () => {
  const created = conforms(schemas.createItem, await send(svc.url, 'POST', '/${name}/items', { name: 'first' }))
  assert.equal(created.status, 201)
  assert.equal(created.headers.get('location'), \`/${name}/items/\${created.body.id}\`)
  assert.deepEqual(conforms(schemas.getItem, await get(svc.url, \`/${name}/items/\${created.body.id}\`)).body,
    created.body)
  assert.deepEqual(conforms(schemas.listItems, await get(svc.url, '/${name}/items')).body, [created.body])
})

test('an unknown item is a 404, a bad id or body a 400 naming the field', async () => {
  assert.equal((await get(svc.url, '/${name}/items/999')).status, 404)
  const badId = await get(svc.url, '/${name}/items/x')
  assert.equal(badId.status, 400)
  assert.match(badId.body.message, /params\\/id/)
  const badBody = await send(svc.url, 'POST', '/${name}/items', { title: 'x' })
  assert.equal(badBody.status, 400)
  assert.match(badBody.body.message, /name/)
})

test('every route answers bad requests with the one error body', async () => {
  await checkErrorContract(svc.url)
})
`,

  [`loadtests/k6/${name}.js`]: `// ${title}: the traffic and its settings are scenarios.js (${name}).
//   k6 run --no-usage-report -e BASE_URL=http://localhost:${port} -e RATE=100 loadtests/k6/${name}.js
import { options as optionsFor, iteration } from './lib.js'

export const options = optionsFor('${name}')
export const ${name} = iteration('${name}')
export default ${name}
`
}

/** Inserts `text` into `file` before the line `anchor`; a file not as expected stops with one line. */
function insertBefore (file, anchor, text) {
  const old = readFileSync(join(root, file), 'utf8')
  const at = old.indexOf(`\n${anchor}\n`)
  if (at < 0) {
    console.error(`new-service: ${file}: the line "${anchor}" is not where it was; nothing written`)
    process.exit(1)
  }
  return () => {
    writeFileSync(join(root, file), old.slice(0, at + 1) + text + old.slice(at + 1))
    console.log(`new-service: added ${name} to ${file}`)
  }
}

// Its scenario, in the one source of the load tests (the k6 scripts and the local runner read it).
const addScenario = insertBefore('loadtests/k6/scenarios.js',
  '// One scenario per service of services/list.js (a missing one is a ReferenceError here).', `const ${name} = {
  param: 'id',
  routes: { 'GET /${name}/items': [] },
  // Reads of the items list: npm run new-service's start, to make the service's own traffic.
  make () {
    return () => ({ method: 'GET', path: '/${name}/items', name: 'GET /${name}/items' })
  }
}

`)
// Its entry in services/list.js: the last of the list (after the last entry's closing brace).
const listFile = join(root, 'services/list.js')
const list = readFileSync(listFile, 'utf8')
const listEnd = list.indexOf('\n]\n')
if (listEnd < 0) {
  console.error('new-service: services/list.js: the end of SERVICES ("]" alone on a line) is not where it was; ' +
    'nothing written')
  process.exit(1)
}
const entry = `,
  {
    name: '${name}',
    summary: 'the ${name} service',
    port: ${port},
    routes: [{ match: 'PathPrefix', path: '/${name}' }],
    samples: ['/${name}/items'],
    checks: ['/readyz', '/${name}/items'],
    scenario: {}
  }`
const addEntry = () => {
  writeFileSync(listFile, list.slice(0, listEnd) + entry + list.slice(listEnd))
  console.log(`new-service: added ${name} to services/list.js`)
}
for (const [path, text] of Object.entries(files)) {
  mkdirSync(dirname(join(root, path)), { recursive: true })
  writeFileSync(join(root, path), text, { flag: 'wx' })
  console.log(`new-service: wrote ${path}`)
}
addScenario()
addEntry()
console.log(`new-service: ${name} takes port ${port} under npm start; now npm install, then npm run generate`)
