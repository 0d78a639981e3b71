// npm run release: what a dry run prints, and the mistakes it refuses before doing anything. The
// release itself (images, SBOMs, signatures, a registry) runs in the cluster e2e (k8s/e2e/release.js).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../..', import.meta.url))
const release = (...args) => spawnSync(process.execPath, ['scripts/release.js', ...args],
  { cwd: root, encoding: 'utf8' })
const version = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version
const status = () => spawnSync('git', ['status', '--porcelain'], { cwd: root, encoding: 'utf8' }).stdout

test('--dry-run prints every step and its commands, and changes nothing', () => {
  const before = status()
  const r = release(version, '--dry-run', '--registry', 'registry.example/acme', '--key', 'cosign.key')
  assert.equal(r.status, 0, r.stderr)
  const steps = [...r.stdout.matchAll(/^\[(\d+)\/(\d+)\] (.*)$/gm)]
  assert.deepEqual(steps.map((m) => m[3].split(':')[0]), [
    'version',
    'images',
    'push the images to registry.example/acme',
    'SBOMs',
    'charts',
    'push the charts to oci',
    'sign with cosign (key cosign.key)',
    'the release, written down'
  ])
  for (const cmd of [
    'buildah bud',
    'buildah push',
    'syft scan registry:registry.example/acme/suite-product@<digest of product>',
    'helm package',
    'helm push',
    'cosign sign registry.example/acme/suite-flows@<digest of flows>',
    'cosign attest --type cyclonedx',
    'cosign sign registry.example/acme/charts/suite@<digest of chart:suite>'
  ]) {
    assert.match(r.stdout, new RegExp(`\\$ (\\S+=\\S+ )*${cmd.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), cmd)
  }
  assert.equal(status(), before)
})

test('refused before any step: no version, not a semantic version, older than the checkout, ' +
  'no CHANGELOG.md section', () => {
  assert.equal(release('--dry-run').status, 2)
  assert.match(release('v1', '--dry-run').stderr, /semantic version/)
  assert.match(release('0.0.1', '--dry-run').stderr, /older than this checkout/)
  const r = release('99.0.0', '--dry-run')
  assert.equal(r.status, 1)
  assert.match(r.stderr, /CHANGELOG.md has no section "## \[99.0.0\]"/)
  assert.equal(r.stdout, '')
})
