// The scale-out matrix, seed 003's method as a command: the same fixed amount of work (--requests
// requests of a scenario over --connections keep-alive connections, as fast as they go: vegeta in a
// closed loop) timed in every cell of instances × WORKERS × load balancer, each cell repeated,
// reported as mean ± stdev and as the ratio to the 1 instance × 1 worker cell without a load
// balancer. `--help` for the options.
// Load balancers: "none" — vegeta sends straight to the instances, round robin from the client (with
// one instance: the plain baseline); in a cluster this is a Service, whose kernel-level spreading
// adds no hop. "round_robin" / "least_conn" — nginx in front of the instances (one more hop and
// one more process on the same cores, as the seeds ran it). Every instance of every cell is
// started before the first measurement and the repetitions go round the cells in turn, so a noisy
// neighbour on a shared machine lands on all cells alike instead of on one.
import { mkdir, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { servers, prepareDatabase, startInstances, requestsServed } from './lib/stack.js'
import { startNginx } from './lib/nginx.js'
import { attackScenario } from './lib/vegeta.js'
import { runCommand, oneOf, someOf, wholeNumbers, wholeNumber, UsageError } from '@suite/kit/args'
import { SCENARIO_NAMES } from './k6/scenarios.js'
import { barChart, svgDocument, fmt, COLORS } from './lib/svg.js'

const here = fileURLToPath(new URL('.', import.meta.url))

export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
export const stdev = (xs) =>
  xs.length < 2 ? 0 : Math.sqrt(xs.reduce((s, x) => s + (x - mean(xs)) ** 2, 0) / (xs.length - 1))
const label = (c) => `${c.instances}×${c.workers} ${c.lb}`

export async function matrix ({
  scenario = 'product', instances = [1, 2], workers = [1, 2], lbs = ['none', 'round_robin', 'least_conn'],
  repeat = 5, requests = 20000, connections = 64, rows = 10000, nginxWorkers = 1,
  databaseUrl, redisUrl, out, log = () => {}
}) {
  await mkdir(out, { recursive: true })
  const pg = await servers({ databaseUrl, redisUrl })
  redisUrl = pg.redisUrl
  const stops = []
  try {
    log(`${scenario}: a database with ${rows} generated rows`)
    const db = await prepareDatabase(scenario, { adminUrl: pg.databaseUrl, rows })
    const cells = []
    for (const n of instances) {
      for (const w of workers) {
        log(`starting ${n} instance(s) × ${w} worker(s)`)
        const procs = await startInstances(scenario, { count: n, workers: w, databaseUrl: db.url, redisUrl })
        stops.push(...procs.map((p) => () => p.stop()))
        for (const lb of lbs) {
          let baseUrls = procs.map((p) => p.url)
          if (lb !== 'none') {
            const nginx = await startNginx({ upstreams: procs.map((p) => p.url), method: lb, workers: nginxWorkers })
            stops.push(() => nginx.stop())
            baseUrls = [nginx.url]
          }
          cells.push({ instances: n, workers: w, lb, baseUrls, procs, runs: [] })
        }
      }
    }
    const run = async (cell, iterations) => {
      const before = await Promise.all(cell.procs.map((p) => requestsServed(p.url)))
      const f = await attackScenario(scenario, {
        env: db.env, baseUrls: cell.baseUrls, rate: 0, requests: iterations, workers: connections
      })
      const after = await Promise.all(cell.procs.map((p) => requestsServed(p.url)))
      return { ...f, served: after.map((a, i) => a - before[i]) }
    }
    log(`warming up every cell (${Math.ceil(requests / 10)} requests each)`)
    for (const cell of cells) await run(cell, Math.ceil(requests / 10))
    for (let r = 0; r < repeat; r++) {
      for (let i = 0; i < cells.length; i++) {
        const cell = cells[(i + r) % cells.length] // a different cell goes first each round
        const f = await run(cell, requests)
        cell.runs.push(f)
        log(`round ${r + 1}/${repeat} ${label(cell)}: ${fmt(f.rps)} RPS, p99 ${fmt(f.p99)} ms`)
      }
    }
    const base = cells.find((c) => c.instances === instances[0] && c.workers === workers[0] && c.lb === lbs[0])
    const baseRps = mean(base.runs.map((f) => f.rps))
    const result = {
      scenario, requests, connections, repeat, rows, nginxWorkers,
      cells: cells.map((c) => {
        const rps = c.runs.map((f) => f.rps)
        const served = c.runs.reduce((acc, f) => acc.map((s, i) => s + f.served[i]), c.procs.map(() => 0))
        const total = served.reduce((a, b) => a + b, 0) || 1
        return {
          instances: c.instances, workers: c.workers, lb: c.lb, rps,
          mean: mean(rps), stdev: stdev(rps), ratio: mean(rps) / baseRps,
          seconds: mean(c.runs.map((f) => f.requests / f.rps)), p99: mean(c.runs.map((f) => f.p99)),
          errors: c.runs.reduce((s, f) => s + f.errors, 0),
          shares: served.map((s) => s / total)
        }
      })
    }
    result.answers = answers(result, { instances, workers, lbs })
    await writeFile(join(out, 'matrix.json'), JSON.stringify(result, null, 2) + '\n')
    await writeFile(join(out, 'matrix.md'), markdown(result))
    await writeFile(join(out, 'matrix.svg'), plot(result))
    return result
  } finally {
    await Promise.allSettled(stops.map((s) => s()))
    await pg.stop()
  }
}

/**
 * "Do threads, instances or a load balancer help?": each factor against its first level with the
 * other factors held at theirs, and whether the difference is larger than the noise (the two
 * means more than two standard errors apart; with one repetition there is no noise estimate).
 */
export function answers ({ cells, repeat }, { instances, workers, lbs }) {
  const find = (i, w, lb) => cells.find((c) => c.instances === i && c.workers === w && c.lb === lb)
  const compare = (question, a, b) => {
    const se = Math.sqrt((a.stdev ** 2 + b.stdev ** 2) / repeat)
    const diff = b.mean - a.mean
    const verdict = repeat < 2
      ? 'one repetition: no noise estimate'
      : Math.abs(diff) <= 2 * se ? 'no difference beyond the noise' : diff > 0 ? 'helps' : 'hurts'
    return { question, ratio: b.mean / a.mean, verdict }
  }
  const out = []
  for (const w of workers.slice(1)) {
    out.push(compare(`WORKERS ${w} vs ${workers[0]} (${instances[0]} instance, ${lbs[0]})`,
      find(instances[0], workers[0], lbs[0]), find(instances[0], w, lbs[0])))
  }
  for (const n of instances.slice(1)) {
    out.push(compare(`${n} instances vs ${instances[0]} (WORKERS ${workers[0]}, ${lbs[0]})`,
      find(instances[0], workers[0], lbs[0]), find(n, workers[0], lbs[0])))
  }
  for (const lb of lbs.slice(1)) {
    for (const n of instances) {
      out.push(compare(`${lb} vs ${lbs[0]} (${n} instance${n > 1 ? 's' : ''}, WORKERS ${workers[0]})`,
        find(n, workers[0], lbs[0]), find(n, workers[0], lb)))
    }
  }
  const [n, w] = [instances.at(-1), workers.at(-1)]
  if (instances.length > 1 && workers.length > 1) {
    out.push(compare(`${n} instances × WORKERS ${w} vs ${instances[0]} × ${workers[0]} (${lbs[0]})`,
      find(instances[0], workers[0], lbs[0]), find(n, w, lbs[0])))
  }
  return out
}

export function markdown ({ scenario, requests, connections, repeat, rows, cells, answers }) {
  const pct = (x) => `${Math.round(x * 100)}`
  const lines = [
    `# Scale-out matrix: ${scenario}`,
    '',
    `${fmt(requests)} requests over ${connections} connections per run (vegeta, closed loop), ` +
    `${repeat} run(s) per cell, ${fmt(rows)} rows of data; ` +
    'load generator, PostgreSQL, Redis, nginx and the services share this machine\'s cores.',
    '',
    '| instances | WORKERS | load balancer | RPS mean ± stdev | ratio to 1×1 | time per run s | p99 ms | errors | ' +
    'requests per instance % |',
    '| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |'
  ]
  for (const c of cells) {
    lines.push(`| ${c.instances} | ${c.workers} | ${c.lb} | ${fmt(c.mean)} ± ${fmt(c.stdev)} | ` +
      `${c.ratio.toFixed(2)} | ${c.seconds.toFixed(2)} | ${fmt(c.p99)} | ${c.errors} | ` +
      `${c.shares.map(pct).join(' / ')} |`)
  }
  lines.push('', '## Do threads, instances or a load balancer help?', '',
    '| comparison | ratio | verdict |', '| --- | ---: | --- |')
  for (const a of answers) lines.push(`| ${a.question} | ${a.ratio.toFixed(2)} | ${a.verdict} |`)
  lines.push('', '![matrix](matrix.svg)', '')
  return lines.join('\n')
}

export function plot ({ scenario, cells }) {
  const lbs = [...new Set(cells.map((c) => c.lb))]
  return svgDocument([barChart({
    title: `${scenario}: RPS per cell, mean ± stdev`,
    xLabel: 'instances × WORKERS',
    yLabel: 'RPS',
    bars: cells.map((c) => ({
      label: `${c.instances}×${c.workers}`, value: c.mean, error: c.stdev, color: COLORS[lbs.indexOf(c.lb)]
    })),
    legend: lbs.map((lb, i) => ({ name: lb === 'none' ? 'no load balancer' : `nginx ${lb}`, color: COLORS[i] })),
    ref: { y: cells[0].mean, label: 'first cell' }
  })])
}

export const usage = {
  usage: 'node loadtests/matrix.js [options]',
  summary: 'Times the same fixed work (--requests over --connections, as fast as answers come) in every cell of ' +
    'instances × WORKERS × load balancer, --repeat times, interleaved; starts its own PostgreSQL and Redis ' +
    '(or uses --database-url / --redis-url), nginx from the machine, and the instances as real processes. ' +
    'Writes matrix.md (mean ± stdev, ratio to the first cell, which factor helps beyond the noise), ' +
    'matrix.svg and matrix.json.',
  options: {
    scenario: { type: 'string', value: 'NAME', default: 'product', help: SCENARIO_NAMES.join(', ') },
    instances: { type: 'string', value: 'N,N,…', default: '1,2', help: 'processes of the service per cell' },
    workers: { type: 'string', value: 'N,N,…', default: '1,2', help: 'WORKERS threads per process' },
    lb: {
      type: 'string',
      value: 'LB,LB,…',
      default: 'none,round_robin,least_conn',
      help: 'none (client-side round robin), round_robin, least_conn (nginx)'
    },
    repeat: { type: 'string', value: 'N', default: '5', help: 'runs per cell' },
    requests: { type: 'string', value: 'N', default: '20000', help: 'requests per run' },
    connections: { type: 'string', value: 'N', default: '64', help: 'keep-alive connections sending them' },
    rows: { type: 'string', value: 'N', default: '10000', help: 'rows of generated data' },
    'nginx-workers': { type: 'string', value: 'N', default: '1', help: 'nginx worker processes' },
    'database-url': {
      type: 'string',
      value: 'URL',
      help: 'admin URL of a PostgreSQL to create the database on (default: a throwaway one)'
    },
    'redis-url': { type: 'string', value: 'URL', help: 'a Redis to use (default: a throwaway one)' },
    out: { type: 'string', value: 'DIR', help: 'where to write (default: loadtests/results/matrix-<scenario>-<time>)' }
  },
  examples: [
    'node loadtests/matrix.js --scenario product',
    'node loadtests/matrix.js --instances 1 --workers 1,2 --lb none --repeat 3 --requests 5000'
  ]
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runCommand('matrix', usage, async (values) => {
    const scenario = oneOf(values, 'scenario', SCENARIO_NAMES)
    const lbs = someOf(values, 'lb', ['none', 'round_robin', 'least_conn'])
    if (new Set(lbs).size !== lbs.length) throw new UsageError(`--lb lists a balancer twice (got "${values.lb}")`)
    const options = {
      scenario,
      instances: wholeNumbers(values, 'instances', { min: 1 }),
      workers: wholeNumbers(values, 'workers', { min: 1 }),
      lbs,
      repeat: wholeNumber(values, 'repeat', { min: 1 }),
      requests: wholeNumber(values, 'requests', { min: 1 }),
      connections: wholeNumber(values, 'connections', { min: 1 }),
      rows: wholeNumber(values, 'rows', { min: 1 }),
      nginxWorkers: wholeNumber(values, 'nginx-workers', { min: 1 }),
      databaseUrl: values['database-url'],
      redisUrl: values['redis-url']
    }
    const out = values.out ??
      join(here, 'results', `matrix-${scenario}-${new Date().toISOString().replace(/[:.]/g, '-')}`)
    const result = await matrix({ ...options, out, log: (m) => process.stderr.write(`matrix: ${m}\n`) })
    console.log(markdown(result))
    console.log(`written to ${relative(process.cwd(), out) || '.'}/ (matrix.md, matrix.svg, matrix.json)`)
  })
}
