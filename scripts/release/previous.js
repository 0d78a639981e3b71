// The release before this checkout's: its version (CHANGELOG.md's next section) and the commit it
// was made from (its tag). The cluster e2e upgrades from it; scripts/test/expand-contract.test.js runs its
// services on this tree's schema.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const git = (args) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' })

/** This tree's version and the one before it (CHANGELOG.md's next section), with the commit it was released from. */
export function previousRelease () {
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
  const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8')
  const versions = [...changelog.matchAll(/^## \[(\d+\.\d+\.\d+[^\]]*)\]/gm)].map((m) => m[1])
  const previous = versions[versions.indexOf(version) + 1]
  if (!previous) throw new Error(`CHANGELOG.md names no release before ${version}`)
  // Its tag; in a clone without tags, the commit before the one that moved package.json past it.
  const tag = git(['rev-parse', '-q', '--verify', `v${previous}^{commit}`])
  const commit = tag.status === 0 ? tag.stdout.trim() : lastCommitOf(previous)
  if (!commit) throw new Error(`no tag v${previous} and no commit with package.json at ${previous}`)
  return { version, previous: { version: previous, commit } }
}

const versionAt = (commit) => {
  const file = git(['show', `${commit}:package.json`])
  return file.status === 0 ? JSON.parse(file.stdout).version : null
}

/** The newest commit of the first-parent history whose package.json says `version`, followed by one that does not. */
function lastCommitOf (version) {
  for (const c of git(['log', '--first-parent', '--format=%H', '--', 'package.json']).stdout.trim().split('\n')) {
    if (versionAt(c) !== version && versionAt(`${c}^1`) === version) return git(['rev-parse', `${c}^1`]).stdout.trim()
  }
  return null
}
