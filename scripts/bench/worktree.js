// Another commit of this repository, checked out beside it with its dependencies, for the benchmarks
// that compare it with this tree (bench:compare, bench:near-start).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { UsageError } from '@suite/kit/args'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** git in this repository; its output, trimmed. */
export const git = (...args) => execFileSync('git', args, {
  cwd: root,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe']
}).trim()

/**
 * Checks `revision` out into a temporary worktree and installs its dependencies; resolves to
 * { commit, dir, remove() }. `program` names the command in its messages. A revision that names no
 * commit is a UsageError.
 */
export function worktree (revision, program) {
  let commit
  try {
    commit = git('rev-parse', '--verify', `${revision}^{commit}`)
  } catch {
    throw new UsageError(`--base ${revision} names no commit of this repository`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'bench-base-'))
  const remove = () => {
    try { git('worktree', 'remove', '--force', dir) } catch {}
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    process.stderr.write(`${program}: checking out ${commit.slice(0, 12)} into ${dir} ` +
      'and installing its dependencies\n')
    git('worktree', 'add', '--detach', dir, commit)
    execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
      { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
  } catch (err) {
    remove()
    throw err
  }
  return { commit, dir: `${dir}/`, remove }
}
