// `npm run bench:compare`: this tree's services against another commit's, side by side in one run —
// the same cases, each measured on the base commit and then on this tree, on the same PostgreSQL,
// Redis and load generator — so a change shows its ratio rather than two figures from two noisy
// moments. `npm run bench:compare -- --help` for the options.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runCommand, UsageError } from '@suite/kit/args'
import { table, POD_MEMORY_MB } from './bench/harness.js'
import { benches, benchOptions, benchValues } from './bench/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))

export const usage = {
  usage: 'npm run bench:compare -- [options]   (or node scripts/bench-compare.js [options])',
  summary: 'Checks out another commit (--base) into a temporary worktree, installs its dependencies, and runs npm run bench\'s cases ' +
    'on its services and on this tree\'s, each case on the base then on this tree, in one run; every row of this tree gets its RPS ' +
    'as a ratio to the base\'s (RPS / pair). Run it on a quiet machine.',
  options: {
    base: { type: 'string', value: 'COMMIT', default: 'HEAD', help: 'the commit to compare with (any git revision)' },
    ...benchOptions('flows')
  },
  examples: [
    'npm run bench:compare -- --base HEAD~1 --only flows',
    'npm run bench:compare -- --base main --only product --products 20000 --duration 20'
  ]
}

await runCommand('bench:compare', usage, async (values) => {
  const { names, numbers } = benchValues(values)
  const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
  let commit
  try {
    commit = git('rev-parse', '--verify', `${values.base}^{commit}`)
  } catch {
    throw new UsageError(`--base ${values.base} names no commit of this repository`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'bench-base-'))
  try {
    process.stderr.write(`bench:compare: checking out ${commit.slice(0, 12)} into ${dir} and installing its dependencies\n`)
    git('worktree', 'add', '--detach', dir, commit)
    execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
    const base = { root: `${dir}/`, label: `base ${commit.slice(0, 7)}` }
    const rows = []
    for (const name of names) rows.push(...await benches[name].run({ ...numbers, base }))
    console.log(`\nWORKERS=${numbers.workers}, ${numbers.duration} s per case; this tree against ${commit.slice(0, 12)} (${git('log', '-1', '--format=%s', commit).slice(0, 80)})`)
    console.log(`Each side's service runs as in its pod: node with that commit's image flags, in a memory cgroup of this tree's chart limit, ${POD_MEMORY_MB} MB (where one can be made).`)
    console.log('RPS / pair: this tree\'s RPS over the base\'s in the row above, measured right before it.\n')
    console.log(table(rows))
  } finally {
    try { git('worktree', 'remove', '--force', dir) } catch {}
    rmSync(dir, { recursive: true, force: true })
  }
})
