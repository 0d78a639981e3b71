// The chart's edge retries on the real proxies, configured from what the chart renders: nginx with
// the Ingress's proxy-next-upstream annotations (the directives ingress-nginx writes for them), and
// Traefik v3.6 (the version the lab cluster runs) with the HTTPRoute's retry Middleware. Backends are
// real loopback servers: one answers, one reads each request whole and then resets the connection
// (a pod killed while the request was in it), one port refuses (a pod whose container is gone).
// Every request carries an id, so a request applied twice would show.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { findBinary, freePort } from '@suite/kit/testing'
import { daemonDir, startDaemon } from '../../loadtests/lib/daemon.js'
import { parse, requireTools, template, umbrella } from './lib.js'

before(requireTools)

/** The chart's retry settings, read back from its rendering (defaults, or `args`). */
function rendered (args = []) {
  const objects = parse(template(umbrella(), ['--set', 'gateway.enabled=true', ...args], {
    apiVersions: ['traefik.io/v1alpha1/Middleware', 'gateway.networking.k8s.io/v1/HTTPRoute']
  }))
  const ingress = objects.find((o) => o.kind === 'Ingress')
  const middleware = objects.find((o) => o.kind === 'Middleware')
  const route = objects.find((o) => o.kind === 'HTTPRoute')
  const a = (name) => ingress.metadata.annotations[`nginx.ingress.kubernetes.io/${name}`]
  return {
    nginx: a('proxy-next-upstream') && {
      nextUpstream: a('proxy-next-upstream'),
      tries: Number(a('proxy-next-upstream-tries')),
      timeout: Number(a('proxy-next-upstream-timeout'))
    },
    middleware,
    filters: route.spec.rules.map((r) => r.filters)
  }
}

// Each request the backends saw: [backend, method, id].
const seen = []
const servers = []
async function backend (name, { reset = false } = {}) {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      seen.push([name, req.method, req.headers['x-id']])
      if (reset) req.socket.resetAndDestroy()
      else res.end('{}')
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return `127.0.0.1:${server.address().port}`
}

let backends
before(async () => {
  backends = {
    live: await backend('live'),
    reset: await backend('reset', { reset: true }),
    refused: `127.0.0.1:${await freePort()}`,
    resets: [
      await backend('reset1', { reset: true }),
      await backend('reset2', { reset: true }),
      await backend('reset3', { reset: true }),
      await backend('reset4', { reset: true })
    ],
    refusing: [
      `127.0.0.1:${await freePort()}`,
      `127.0.0.1:${await freePort()}`,
      `127.0.0.1:${await freePort()}`,
      `127.0.0.1:${await freePort()}`
    ]
  }
})
after(() => { for (const s of servers) s.close() })

// The upstream sets each proxy serves, by path prefix.
const POOLS = () => ({
  'refused-live': [backends.refused, backends.live],
  'reset-live': [backends.reset, backends.live],
  resets: backends.resets,
  refusing: backends.refusing,
  live: [backends.live]
})

let ids = 0
/** `n` requests to `/<pool>/` through `url`; resolves to [[id, status]]. */
async function send (url, pool, method, n = 8) {
  const out = []
  for (let i = 0; i < n; i++) {
    const id = `r${++ids}`
    const res = await fetch(`${url}/${pool}/x`, {
      method,
      headers: { 'x-id': id, 'content-type': 'application/json' },
      body: method === 'POST' ? '{"a":1}' : undefined
    })
    await res.arrayBuffer()
    out.push([id, res.status])
  }
  return out
}
const times = (id) => seen.filter((s) => s[2] === id).length
const where = (id) => seen.filter((s) => s[2] === id).map((s) => s[0])

async function startNginx ({ nextUpstream, tries, timeout }) {
  const dir = await daemonDir('nginx-retries')
  const port = await freePort()
  const pools = Object.entries(POOLS())
  const upstreams = pools.map(([name, list]) =>
    `  upstream ${name} {\n${list.map((s) => `    server ${s} max_fails=0;`).join('\n')}\n  }`).join('\n')
  // max_fails=0: ingress-nginx's balancer never benches a pod by itself, it follows the endpoints.
  await writeFile(join(dir, 'nginx.conf'), `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr crit;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${upstreams}
  server {
    listen 127.0.0.1:${port};
    proxy_http_version 1.1;
    proxy_connect_timeout 5s;
    proxy_next_upstream ${nextUpstream};
    proxy_next_upstream_tries ${tries};
    proxy_next_upstream_timeout ${timeout}s;
${pools.map(([name]) => `    location /${name}/ { proxy_pass http://${name}; }`).join('\n')}
  }
}
`)
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    ...await startDaemon({
      bin: findBinary('nginx'),
      args: ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'],
      readyUrl: `${url}/live/`,
      dir
    })
  }
}

async function startTraefik (middleware) {
  const dir = await daemonDir('traefik-retries')
  const port = await freePort()
  const pools = Object.entries(POOLS())
  const routers = pools.map(([name]) => `    ${name}:\n      rule: PathPrefix(\`/${name}/\`)\n` +
    `      service: ${name}\n      middlewares: [retry]`).join('\n')
  const services = pools.map(([name, list]) => `    ${name}:\n      loadBalancer:\n        servers:\n` +
    `${list.map((s) => `          - url: http://${s}`).join('\n')}`).join('\n')
  await writeFile(join(dir, 'dynamic.yaml'), `http:
  middlewares:
    retry:
      retry: ${JSON.stringify(middleware.spec.retry)}
  routers:
${routers}
  services:
${services}
`)
  const url = `http://127.0.0.1:${port}`
  const daemon = await startDaemon({
    bin: findBinary('traefik'),
    args: [`--entryPoints.web.address=127.0.0.1:${port}`, `--providers.file.filename=${join(dir, 'dynamic.yaml')}`,
      '--log.level=ERROR', '--global.checkNewVersion=false', '--global.sendAnonymousUsage=false'],
    readyUrl: `${url}/live/`,
    dir
  })
  return { url, ...daemon }
}

test('the chart renders bounded retries: the Ingress\'s nginx annotations, the HTTPRoute\'s Traefik Middleware; ' +
  'off when turned off', () => {
  const on = rendered()
  assert.deepEqual(on.nginx, { nextUpstream: 'error timeout', tries: 3, timeout: 10 })
  assert.deepEqual(on.middleware.spec, { retry: { attempts: 3, initialInterval: '50ms' } })
  for (const filters of on.filters) {
    assert.deepEqual(filters, [{
      type: 'ExtensionRef',
      extensionRef: { group: 'traefik.io', kind: 'Middleware', name: on.middleware.metadata.name }
    }])
  }
  const off = rendered(['--set', 'retries.enabled=false'])
  assert.equal(off.nginx, undefined)
  assert.equal(off.middleware, undefined)
  for (const filters of off.filters) assert.equal(filters, undefined)
  // Without Traefik's API the route carries no filter that would point at nothing.
  const plain = parse(template(umbrella(), ['--set', 'gateway.enabled=true'], {
    apiVersions: ['gateway.networking.k8s.io/v1/HTTPRoute']
  }))
  assert.equal(plain.find((o) => o.kind === 'Middleware'), undefined)
  for (const r of plain.find((o) => o.kind === 'HTTPRoute').spec.rules) assert.equal(r.filters, undefined)
})

test('nginx with the Ingress\'s annotations: a refused connection goes to the next pod, any method; ' +
  'after a reset GET does, a POST never; tries bounded', async () => {
  const nginx = await startNginx(rendered().nginx)
  try {
    for (const method of ['POST', 'GET']) {
      for (const [id, status] of await send(nginx.url, 'refused-live', method)) {
        assert.equal(status, 200, `${method} ${id}: refused, then served by the live pod`)
        assert.deepEqual(where(id), ['live'], `${method} ${id}: sent once`)
      }
    }
    const posts = await send(nginx.url, 'reset-live', 'POST')
    for (const [id, status] of posts) {
      assert.equal(times(id), 1, `POST ${id} was sent ${times(id)} times`)
      assert.equal(status, where(id)[0] === 'live' ? 200 : 502)
    }
    assert.ok(posts.some(([id]) => where(id)[0] === 'reset'), 'some POSTs met the reset')
    const gets = await send(nginx.url, 'reset-live', 'GET')
    for (const [id, status] of gets) assert.equal(status, 200, `GET ${id}: ${where(id)}`)
    assert.ok(gets.some(([id]) => where(id).join() === 'reset,live'), 'a GET reset was sent again, to the next pod')
    const [[id, status]] = await send(nginx.url, 'resets', 'GET', 1)
    assert.equal(status, 502)
    assert.equal(times(id), 3, 'proxy-next-upstream-tries: 3 tries in all')
    const [[, refused]] = await send(nginx.url, 'refusing', 'POST', 1)
    assert.equal(refused, 502, 'every pod refusing: an error after the last try')
  } finally {
    await nginx.stop()
  }
})

test('Traefik with the chart\'s Middleware: a refused connection goes to the next pod, any method; ' +
  'nothing that reached a pod is sent again; attempts bounded', async () => {
  const traefik = await startTraefik(rendered().middleware)
  try {
    for (const method of ['POST', 'GET']) {
      for (const [id, status] of await send(traefik.url, 'refused-live', method)) {
        assert.equal(status, 200, `${method} ${id}: refused, then served by the live pod`)
        assert.deepEqual(where(id), ['live'], `${method} ${id}: sent once`)
      }
    }
    for (const method of ['POST', 'GET']) {
      const answers = await send(traefik.url, 'reset-live', method)
      for (const [id, status] of answers) {
        assert.equal(times(id), 1, `${method} ${id} was sent ${times(id)} times`)
        assert.equal(status, where(id)[0] === 'live' ? 200 : 502)
      }
      assert.ok(answers.some(([id]) => where(id)[0] === 'reset'), `some ${method}s met the reset`)
    }
    const [[id, status]] = await send(traefik.url, 'resets', 'GET', 1)
    assert.equal(status, 502)
    assert.equal(times(id), 1)
    // Every pod refusing: 502 once the tries are spent. Traefik 3.6 counts its retries nowhere (no
    // metric, no access-log field), so the waits between them show them: 50 ms ± 50 %, then ×√2.
    const started = performance.now()
    const [[, refused]] = await send(traefik.url, 'refusing', 'POST', 1)
    const waited = performance.now() - started
    assert.equal(refused, 502)
    assert.ok(waited >= 60, `two retries wait 60 ms at least, this took ${waited.toFixed(0)} ms`)
  } finally {
    await traefik.stop()
  }
})
