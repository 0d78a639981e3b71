// The bench's own arithmetic and options, without running a benchmark.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pairsAcrossRuns, table, sameBytesShares, sameBytesCpu, ceilingShares } from '../bench/report.js'
import { machineCpuSeconds } from '../bench/measure.js'
import { writeReport } from '../bench/report-file.js'
import { targets as tracingTargets } from '../bench/tracing.js'
import { benchValues } from '../bench/index.js'
import { UsageError, UserError } from '@suite/kit/args'
import { targets as profileTargets } from '../bench/profile.js'
import { startService } from '@suite/kit/testing'

const row = (service, name, rps, pairOf) => ({
  service,
  case: name,
  connections: 50,
  rps,
  ...(pairOf && { pairOf, sameBytesPair: true })
})

test('bench:compare --repeat: each run\'s ratio of a pair and their median, rows without a pair row left out', () => {
  const run = (base, mine) => [
    row('product', 'styles (base)', base),
    row('product', 'styles (this tree)', mine, 'styles (base)'),
    row('product', 'page 1 (this tree) (interleaved)', 500, 'pages (base)')
  ]
  const text = pairsAcrossRuns([run(100, 90), run(100, 120), run(200, 210), run(100, 80)])
  const lines = text.split('\n')
  assert.equal(lines.length, 3, text)
  // 0.90, 1.20, 1.05, 0.80: the median of an even count is the mean of the middle two
  assert.equal(lines[2], '| product | styles (this tree) | 50 | 0.90, 1.20, 1.05, 0.80 | 0.98 |')
  assert.equal(pairsAcrossRuns([run(100, 90), run(100, 120), run(100, 70)]).split('\n')[2],
    '| product | styles (this tree) | 50 | 0.90, 1.20, 0.70 | 0.90 |')
})

test('a pair at a fixed rate is compared by CPU per request (both answer the rate), ' +
  'never counted as an RPS share', () => {
  const atRate = (name, cpu, pairOf) => ({
    ...row('product', name, 3000, pairOf),
    connections: 64,
    rate: 3000,
    counters: { 'CPU µs/req': cpu }
  })
  const run = (fastify, mine) => [
    { ...row('product', 'styles — Fastify', 10_000), counters: { 'CPU µs/req': 30 } },
    { ...row('product', 'styles', 8_000, 'styles — Fastify'), counters: { 'CPU µs/req': 45 } },
    atRate('styles at 3K — Fastify', fastify),
    atRate('styles at 3K', mine, 'styles at 3K — Fastify')
  ]
  const rows = run(100, 160)
  assert.deepEqual(sameBytesShares(rows, 'product'), [['styles', 0.8]])
  assert.deepEqual(sameBytesCpu(rows, 'product'), [['styles at 3K', 160, 100]])
  const lines = table(rows).split('\n')
  assert.match(lines.find((l) => l.startsWith('| product | styles at 3K |')),
    /\| - \(fixed 3,000\/s\) \| CPU 1\.60× \|/)
  assert.match(lines.find((l) => l.startsWith('| product | styles |')), /\| 0\.80 \|/)
  const across = pairsAcrossRuns([run(100, 160), run(100, 140), run(100, 150)]).split('\n')
  assert.equal(across[3], '| product | styles at 3K: CPU per request / pair | 64 | 1.60, 1.40, 1.50 | 1.50 |')
  // Without the CPU of both sides (a case measured without its process) there is no ratio to give.
  const blind = run(100, 160).map((r) => ({ ...r, counters: undefined }))
  assert.equal(pairsAcrossRuns([blind]).split('\n').length, 3)
  assert.deepEqual(sameBytesCpu(blind, 'product'), [])
})

test('bench --env: settings of the measured services go to this tree\'s services; others are refused by name', () => {
  const values = (env, only = 'product,profile') => ({ only, duration: '10', workers: '1', traffic: 'mix', env })
  assert.deepEqual(benchValues(values(['CACHE_NEAR_MAX_BYTES=16777216', 'LOG_LEVEL=warn'])).numbers.settings,
    { CACHE_NEAR_MAX_BYTES: '16777216', LOG_LEVEL: 'warn' })
  assert.deepEqual(benchValues(values(['FLOWS_BATCH_WINDOW_MS=2'], 'flows')).numbers.settings,
    { FLOWS_BATCH_WINDOW_MS: '2' })
  const refused = (env, message) => assert.throws(() => benchValues(values(env)),
    (err) => err instanceof UsageError && err.message === message)
  refused(['FLOWS_BATCH_WINDOW_MS=2'], '--env FLOWS_BATCH_WINDOW_MS: not a setting of product, profile')
  refused(['WORKERS=2'], '--env WORKERS: the bench sets it itself (use --workers)')
  refused(['cache=1'], '--env must be NAME=VALUE with NAME in capitals (got "cache=1")')
})

test('bench --original: only on profile\'s original traffic, a checkout that can run; ' +
  'ours ≥ 3× its RPS in the same rounds', () => {
  const values = (more) => ({ only: 'profile', duration: '10', workers: '1', traffic: 'original', env: [], ...more })
  assert.throws(() => benchValues(values({ traffic: 'mix', original: '/x' })),
    (err) => err instanceof UsageError && /--traffic original --only profile/.test(err.message))
  assert.throws(() => benchValues(values({ only: 'menu', original: '/x' })), UsageError)
  const empty = mkdtempSync(join(tmpdir(), 'bench-original-'))
  try {
    assert.throws(() => benchValues(values({ original: empty })),
      (err) => err instanceof UserError && err.message.includes('no server/index.js, node_modules/express'))
  } finally {
    rmSync(empty, { recursive: true })
  }
  const theirs = 'the original (Express, pg, redis), original mix'
  const side = (rps, cpu, name, pairOf) => ({
    service: 'profile',
    case: name,
    connections: 60,
    rps,
    pairOf,
    counters: { 'CPU µs/req': cpu }
  })
  const judged = (ours) => profileTargets([
    side(4000, 110, theirs),
    side(ours, 50, 'original mix, beside the original', theirs)
  ]).filter(([t]) => t.startsWith('original mix, beside'))
  const [[rpsTarget, met, value], [cpuLine, , cpu]] = judged(12_400)
  assert.match(rpsTarget, /≥ 3× the original's RPS/)
  assert.equal(met, true)
  assert.equal(value, '3.10× (12,400 / 4,000 RPS)')
  assert.match(cpuLine, /the original's CPU per request over ours/)
  assert.equal(cpu, '2.20× (110.0 / 50.0 µs)')
  assert.equal(judged(11_000)[0][1], false)
  assert.deepEqual(profileTargets([side(4000, 110, theirs)]).filter(([t]) => t.startsWith('original mix, beside')),
    [], 'no pair, no line')
  // The original's own memory is not ours: the RSS target reads our process's rows only.
  const rss = (name, mb) => ({ service: 'profile', case: name, connections: 60, rps: 1, counters: { 'RSS MB': mb } })
  const hello = {
    service: 'profile',
    case: 'bare Fastify GET /hello (baseline)',
    connections: 60,
    rps: 2,
    baseline: true
  }
  const memory = profileTargets([hello, rss('original mix (75% on 20 hot ids), cold start', 122), rss(theirs, 202)])
    .find(([t]) => t.startsWith('RSS'))
  assert.deepEqual(memory.slice(1), [true, '122 MB'])
})

test('a write beside bare Fastify parsing its bodies is a ceiling, never counted as a same-bytes read', () => {
  const rows = [
    { ...row('flows', 'bare Fastify parsing the same bodies', 12_000), writes: true },
    { ...row('flows', 'POST /flows — beside it', 7_500, 'bare Fastify parsing the same bodies'), writes: true },
    row('product', 'styles — Fastify', 10_000),
    row('product', 'styles', 8_000, 'styles — Fastify')
  ]
  assert.deepEqual(ceilingShares(rows, 'flows'), [['POST /flows — beside it', 0.625]])
  assert.deepEqual(sameBytesShares(rows, 'flows'), [])
  assert.deepEqual(sameBytesShares(rows, 'product'), [['styles', 0.8]])
  assert.deepEqual(ceilingShares(rows, 'product'), [])
})

test('the machine\'s CPU counts at least what this process burns', () => {
  const before = machineCpuSeconds()
  const own = process.cpuUsage()
  const burnt = () => (process.cpuUsage(own).user + process.cpuUsage(own).system) / 1e6
  // Until this process has had 0.3 s of CPU, however busy the machine (a wall-clock loop got too
  // little of it beside the other test files).
  const until = performance.now() + 30_000
  while (burnt() < 0.3 && performance.now() < until);
  const mine = burnt()
  // /proc/stat counts in 10 ms ticks: allow one per core.
  assert.ok(machineCpuSeconds() - before >= mine - 0.02,
    `machine ${machineCpuSeconds() - before} s, this process ${mine} s`)
  assert.ok(mine >= 0.3, `this process had ${mine} s of CPU in 30 s`)
})

test('hello.js with BODIES answers each recorded request with its bytes, ' +
  'a POST only once its JSON body parsed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hello-bodies-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const body = (text) => Buffer.from(text).toString('base64')
  writeFileSync(join(dir, 'bodies.json'), JSON.stringify({
    'GET /products/1': { status: 200, type: 'application/json; charset=utf-8', body: body('{"id":1}') },
    'POST /flows': { status: 200, type: 'application/json; charset=utf-8', body: body('{"stored":5}') }
  }))
  const hello = await startService({
    entry: new URL('../bench/hello.js', import.meta.url).pathname,
    env: { BODIES: join(dir, 'bodies.json') }
  })
  t.after(() => hello.stop())
  const post = (text) => fetch(`${hello.url}/flows`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text
  })
  const ok = await post('[{"hour":1}]')
  assert.equal(ok.status, 200)
  assert.equal(ok.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.equal(await ok.text(), '{"stored":5}')
  assert.equal((await post('[{"hour":')).status, 400)
  const get = await fetch(`${hello.url}/products/1`)
  assert.equal(await get.text(), '{"id":1}')
  assert.equal((await fetch(`${hello.url}/flows`)).status, 404) // recorded for POST only
  assert.equal((await post('[]').then((r) => r.status)), 200)
  assert.equal((await fetch(`${hello.url}/products/1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}'
  })).status, 404)
})

test('bench --report: the printed lines, the command and the machine in FILE; ' +
  'a bar per full-speed case in FILE.svg', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-report-'))
  try {
    const rows = [
      { service: 'product', case: 'hello (baseline)', connections: 50, rps: 10000, baseline: true },
      { service: 'product', case: 'cached products/:id', connections: 50, rps: 8000 },
      { service: 'product', case: 'uncached products/:id', connections: 50, rps: 2500 },
      { service: 'product', case: 'cached styles at 3K RPS', connections: 64, rps: 3000, rate: 3000 }
    ]
    const file = join(dir, 'docs', 'benchmarks', 'report.md')
    const [md, svg] = writeReport(file, {
      command: 'npm run bench -- --only product',
      lines: ['WORKERS=1, 10 s per case', '', table(rows)],
      rows,
      date: new Date('2026-11-27T00:00:00Z')
    })
    const text = readFileSync(md, 'utf8')
    assert.match(text,
      /^Written by `npm run bench -- --only product` on 2026-11-27, on .+ CPUs, \d+ GiB, Linux .+, Node v\d+/m)
    assert.ok(text.includes(table(rows)) && text.includes('WORKERS=1, 10 s per case'))
    assert.ok(text.includes('![RPS of each case over bare Fastify](report.svg)'))
    const chart = readFileSync(svg, 'utf8')
    assert.equal(chart.match(/<rect /g).length, 2, 'the two full-speed cases, not the baseline or the fixed-rate case')
    assert.ok(chart.includes('>0.80<') && chart.includes('>0.25<'), 'each bar says its ratio to the baseline')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('tracing\'s targets judge its own pairs only, and the same-bytes lines only the same-bytes pairs, ' +
  'whatever ran together', () => {
  const row = (c, cpu, pairOf) => ({
    service: 'product',
    case: c,
    connections: 64,
    rate: 3000,
    rps: 3000,
    p99: 5,
    counters: { 'CPU µs/req': cpu },
    ...(pairOf && { pairOf })
  })
  const rows = [
    row('bare Fastify, the same bytes', 20),
    { ...row('cached products/:id/styles at 3K RPS', 60, 'bare Fastify, the same bytes'), sameBytesPair: true },
    row('cached styles at 3K RPS, tracing no endpoint', 100),
    row('cached styles at 3K RPS, tracing at 10% (the default)', 110, 'cached styles at 3K RPS, tracing no endpoint'),
    row('cached styles at 3K RPS, tracing at 100%', 170, 'cached styles at 3K RPS, tracing no endpoint')
  ]
  assert.deepEqual(tracingTargets(rows).map(([what, met]) => [what.split(':')[0], met]), [
    ['cached styles at 3K RPS, tracing at 10% (the default)', true],
    ['cached styles at 3K RPS, tracing at 100%', false]
  ])
  // …and the same-bytes lines take only the same-bytes pairs, not tracing's.
  assert.deepEqual(sameBytesCpu(rows, 'product'), [['cached products/:id/styles at 3K RPS', 60, 20]])
})
