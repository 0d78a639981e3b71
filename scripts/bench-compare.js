// `npm run bench:compare`: this tree's services against another commit's, side by side in one run —
// the same cases, each measured on the base commit and then on this tree, on the same PostgreSQL,
// Redis and load generator — so a change shows its ratio rather than two figures from two noisy
// moments. `npm run bench:compare -- --help` for the options.
import { runCommand, wholeNumber } from '@suite/kit/args'
import { POD_MEMORY_MB } from './bench/harness.js'
import { MACHINE_CPU_NOTE } from './bench/measure.js'
import { table, pairsAcrossRuns } from './bench/report.js'
import { benches, benchOptions, benchValues, settingsOf } from './bench/index.js'
import { git, worktree } from './bench/worktree.js'

export const usage = {
  usage: 'npm run bench:compare -- [options]   (or node scripts/bench-compare.js [options])',
  summary: 'Checks out another commit (--base) into a temporary worktree, installs its dependencies, ' +
    'and runs npm run bench\'s cases on its services and on this tree\'s, each case on the base then on this tree, ' +
    'in one run; every row of this tree gets its RPS as a ratio to the base\'s (RPS / pair). ' +
    'Run it on a quiet machine.',
  options: {
    base: { type: 'string', value: 'COMMIT', default: 'HEAD', help: 'the commit to compare with (any git revision)' },
    'base-env': {
      type: 'string',
      value: 'NAME=VALUE',
      multiple: true,
      default: [],
      help: 'a setting of the base\'s services, as --env is of this tree\'s: the base runs with its defaults ' +
        'otherwise, so --base HEAD --env NAME=VALUE measures a setting against its default'
    },
    repeat: {
      type: 'string',
      value: 'N',
      default: '1',
      help: 'runs of the whole comparison, each with fresh PostgreSQL, Redis and service processes; ' +
        'then each ratio of every run and their median (a process can be slower than another of the same code ' +
        'for its whole life)'
    },
    rate: {
      type: 'string',
      value: 'N',
      help: 'every case at a fixed N requests a second (an open loop) instead of its own load, each ratio then ' +
        'its CPU per request over the base\'s: what a change costs a request, which RPS at saturation shows ' +
        'only through the noise of a machine the load generator shares (a case with a rate of its own keeps it)'
    },
    // --original is npm run bench's: the original is no commit of this repository.
    ...benchOptions('flows', { original: false })
  },
  examples: [
    'npm run bench:compare -- --base HEAD~1 --only flows',
    'npm run bench:compare -- --base main --only product --products 20000 --duration 20',
    'npm run bench:compare -- --base HEAD~5 --rate 1000 --repeat 3',
    'npm run bench:compare -- --base HEAD --only product --env CACHE_NEAR_MAX_BYTES=16777216 --repeat 3',
    'npm run bench:compare -- --base HEAD~1 --only profile --env CACHE_NEAR_MAX_BYTES=16777216 ' +
    '--base-env CACHE_NEAR_MAX_BYTES=16777216'
  ]
}

await runCommand('bench:compare', usage, async (values) => {
  const { names, numbers } = benchValues(values)
  const repeat = wholeNumber(values, 'repeat', { min: 1 })
  const rate = values.rate === undefined ? undefined : wholeNumber(values, 'rate', { min: 1 })
  const baseSettings = settingsOf(values, 'base-env', names)
  const { commit, dir, remove } = worktree(values.base, 'bench:compare')
  try {
    const base = { root: dir, label: `base ${commit.slice(0, 7)}`, settings: baseSettings }
    const listed = (s) => Object.entries(s).map(([k, v]) => `${k}=${v}`).join(' ')
    const runs = []
    for (let run = 1; run <= repeat; run++) {
      const rows = []
      for (const name of names) rows.push(...await benches[name].run({ ...numbers, base, rate }))
      runs.push(rows)
      console.log(`\n${repeat > 1 ? `Run ${run} of ${repeat}. ` : ''}WORKERS=${numbers.workers}, ` +
        `${numbers.duration} s per case${rate ? `, each at ${rate} requests a second unless it has a rate` : ''}; ` +
        `this tree${listed(numbers.settings) ? ` with ${listed(numbers.settings)}` : ''} ` +
        `against ${commit.slice(0, 12)}${listed(baseSettings) ? ` with ${listed(baseSettings)}` : ''} ` +
        `(${git('log', '-1', '--format=%s', commit).slice(0, 80)})`)
      console.log('Each side\'s service runs as in its pod: node with that commit\'s image flags, ' +
        `in a memory cgroup of this tree's chart limit, ${POD_MEMORY_MB} MB (where one can be made).`)
      console.log('RPS / pair: this tree\'s RPS over the base\'s in the row above, measured right before it; ' +
        'at a fixed rate (CPU n×), its CPU per request over the base\'s.')
      console.log(`${MACHINE_CPU_NOTE}\n`)
      console.log(table(rows))
    }
    if (repeat > 1) console.log(`\nEach ratio over the ${repeat} runs:\n\n${pairsAcrossRuns(runs)}`)
  } finally {
    remove()
  }
})
