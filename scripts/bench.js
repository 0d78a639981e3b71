// `npm run bench`: every service's benchmark, one after the other (never at once: they share the
// machine's cores with their load generator), each against bare Fastify measured in its own run,
// printed as one table. `npm run bench -- --help` for the options.
import { runCommand } from '@suite/kit/args'
import { POD_MEMORY_MB } from './bench/harness.js'
import { MACHINE_CPU_NOTE } from './bench/measure.js'
import { table, sameBytesShares, sameBytesCpu, ceilingShares } from './bench/report.js'
import { benches, benchOptions, benchValues, SIZE_NAMES } from './bench/index.js'
import { writeReport } from './bench/report-file.js'

// A cached read's share of bare Fastify sending the same bytes, with one worker: the kit's cost per request.
const SAME_BYTES_TARGET = 0.85
// …and its CPU per request at a fixed arrival rate, at most this many times that Fastify's.
const SAME_BYTES_CPU_TARGET = 1.25

export const usage = {
  usage: 'npm run bench -- [options]   (or node scripts/bench.js [options])',
  summary: 'Starts a throwaway PostgreSQL and Redis per service, loads its generated data set, and measures its ' +
    'routes cached and uncached against bare Fastify (GET /hello) measured at the start and end of the same run, ' +
    'and each cached read against bare Fastify sending the same bytes from a Buffer: ' +
    'throughput over a fixed number of connections, and latency at a fixed arrival rate (vegeta, open loop). ' +
    'Prints one table, then the targets. Run it on a quiet machine.',
  options: {
    ...benchOptions(Object.keys(benches).join(',')),
    report: {
      type: 'string',
      value: 'FILE',
      help: 'also write what it prints to FILE (Markdown), with the machine it ran on and a chart of each case ' +
        'against bare Fastify (FILE\'s name, .svg)'
    }
  },
  examples: [
    'npm run bench',
    'npm run bench -- --only product,menu --duration 20 --menus 1000000',
    'npm run bench -- --only flows --workers 2',
    'npm run bench -- --traffic original --only profile --duration 20',
    'npm run bench -- --report docs/benchmarks/report.md'
  ]
}

await runCommand('bench', usage, async (values) => {
  const { names, numbers } = benchValues(values)
  const rows = []
  for (const name of names) rows.push(...await benches[name].run(numbers))

  const traffic = numbers.traffic === 'original' ? 'the originals\' traffic; ' : ''
  const data = SIZE_NAMES.map((k) => `${numbers[k]} ${k}`).join(', ')
  const lines = [
    `WORKERS=${numbers.workers}, ${numbers.duration} s per case; ${traffic}data: ${data}`,
    `Each service runs as in its pod: node with its image's flags, in a memory cgroup of the chart's ` +
    `${POD_MEMORY_MB} MB limit (where one can be made; the run's log says where not).`,
    'Each RPS / baseline is to bare Fastify (one thread) measured at the start and end of that service\'s own run.',
    'RPS / pair: a cached read\'s RPS over bare Fastify sending the same bytes ' +
    '(a write\'s: over bare Fastify parsing the same bodies), measured in the same interleaved rounds; ' +
    'at a fixed rate (CPU n×), its CPU per request over Fastify\'s.' +
    (numbers.original
      ? ' "Beside the original": ours over the original service, on the same mix in the same rounds.'
      : ''),
    MACHINE_CPU_NOTE,
    '',
    table(rows)
  ]
  for (const name of names) {
    const targets = [
      ...sameBytesShares(rows, name).map(([c, share]) => [
        `${c} ≥ ${100 * SAME_BYTES_TARGET}% of bare Fastify with the same bytes`,
        share >= SAME_BYTES_TARGET,
        `${Math.round(100 * share)}%`
      ]),
      // Below saturation, where pods an HPA keeps at 70% run: one turn of the event loop holds a request or two.
      ...sameBytesCpu(rows, name).map(([c, mine, fastify]) => [
        `${c}: CPU per request ≤ ${SAME_BYTES_CPU_TARGET}× bare Fastify with the same bytes`,
        mine <= SAME_BYTES_CPU_TARGET * fastify,
        `${mine.toFixed(0)} µs / ${fastify.toFixed(0)} µs (${(mine / fastify).toFixed(2)}×)`
      ]),
      // Not a target: a write's room left on this machine, beside a Fastify that parses the body and stores nothing.
      ...ceilingShares(rows, name).map(([c, share]) => [
        `${c}: RPS as a share of bare Fastify parsing the same bodies (the ceiling)`,
        undefined,
        `${Math.round(100 * share)}%`
      ]),
      ...(benches[name].targets?.(rows) ?? [])
    ]
    if (!targets.length) continue
    lines.push('', `| ${name} target | result | met |`, '| --- | --- | --- |')
    for (const [target, met, value] of targets) {
      lines.push(`| ${target} | ${value} | ${met === undefined ? '—' : met ? 'yes' : 'NO'} |`)
    }
  }
  console.log(`\n${lines.join('\n')}`)
  if (values.report) {
    const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim()
    console.log(`\nbench: wrote ${writeReport(values.report, { command, lines, rows }).join(' and ')}`)
  }
})
