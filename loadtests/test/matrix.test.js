// The scale-out matrix, tiny (1 repetition, a few hundred requests): every cell measured through
// the path it names — straight to the instances or through nginx — and reported.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { adminUrl, redisUrl } from '@suite/kit/testing/env'
import { matrix, answers, mean, stdev } from '../matrix.js'

test('mean and sample standard deviation', () => {
  assert.equal(mean([1, 2, 3]), 2)
  assert.equal(stdev([2, 4, 4, 4, 5, 5, 7, 9]), Math.sqrt(32 / 7))
  assert.equal(stdev([5]), 0)
})

test('a difference counts only beyond two standard errors', () => {
  const cell = (instances, lb, m, sd) => ({ instances, workers: 1, lb, mean: m, stdev: sd })
  const levels = { instances: [1, 2], workers: [1], lbs: ['none', 'round_robin'] }
  const [more, lb1] = answers({
    repeat: 5,
    cells: [
      cell(1, 'none', 1000, 50), cell(1, 'round_robin', 1030, 50),
      cell(2, 'none', 1500, 50), cell(2, 'round_robin', 900, 50)
    ]
  }, levels)
  assert.equal(more.verdict, 'helps')
  assert.equal(more.ratio, 1.5)
  assert.equal(lb1.verdict, 'no difference beyond the noise')
  assert.match(answers({
    repeat: 1,
    cells: [
      cell(1, 'none', 1000, 0), cell(1, 'round_robin', 900, 0),
      cell(2, 'none', 1, 0), cell(2, 'round_robin', 1, 0)
    ]
  }, levels)[0].verdict, /no noise estimate/)
})

test('every cell is measured, and nginx and the client spread requests over the instances', async () => {
  const out = await mkdtemp(join(tmpdir(), 'matrix-test-'))
  try {
    const r = await matrix({
      scenario: 'product', instances: [1, 2], workers: [1], repeat: 1, requests: 300, connections: 8, rows: 300,
      databaseUrl: adminUrl, redisUrl, out
    })
    assert.deepEqual(r.cells.map((c) => `${c.instances}×${c.workers} ${c.lb}`),
      ['1×1 none', '1×1 round_robin', '1×1 least_conn', '2×1 none', '2×1 round_robin', '2×1 least_conn'])
    assert.equal(r.cells[0].ratio, 1)
    for (const c of r.cells) {
      assert.ok(c.mean > 0, `${c.lb}: no throughput`)
      assert.equal(c.errors, 0, `${c.instances}×${c.workers} ${c.lb}: errors`)
      if (c.instances === 2) {
        // Round robin, from the client or from nginx, alternates; least_conn only has to use both.
        const [lo, hi] = c.lb === 'least_conn' ? [0.05, 0.95] : [0.4, 0.6]
        for (const s of c.shares) assert.ok(s >= lo && s <= hi, `${c.lb}: shares ${c.shares}`)
      }
    }
    const md = await readFile(join(out, 'matrix.md'), 'utf8')
    assert.match(md, /\| 2 \| 1 \| least_conn \| [\d,]+ ± 0 \| [\d.]+ \|/)
    assert.match(md, /Do threads, instances or a load balancer help\?/)
    const svg = await readFile(join(out, 'matrix.svg'), 'utf8')
    assert.equal(svg.match(/<rect class="bar"/g).length, 6, 'one bar per cell')
  } finally {
    await rm(out, { recursive: true, force: true })
  }
})
