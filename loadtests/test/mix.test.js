// The traffic shapes of the k6 scripts, checked as proportions over many draws of a seeded
// generator: the seeds' hot sets, the journal's pagination mix, the route weights.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { range, weights, weighted, uniform, spread, hotOrUniform, page } from '../k6/mix.js'

// Park–Miller: deterministic draws, so the proportions below never flake.
function seeded (seed) {
  let s = seed
  return () => (s = (s * 16807) % 2147483647) / 2147483647
}
const N = 100_000
const share = (draw, pred) => {
  let n = 0
  for (let i = 0; i < N; i++) if (pred(draw())) n++
  return n / N
}
const near = (actual, expected, tolerance, what) =>
  assert.ok(Math.abs(actual - expected) <= tolerance,
    `${what}: ${actual.toFixed(4)}, expected ${expected} ± ${tolerance}`)

test('ranges and weight lists parse, and say what is wrong', () => {
  assert.deepEqual(range('1-2000'), [1, 2000])
  assert.deepEqual(weights('list:2,product:3'), [['list', 2], ['product', 3]])
  assert.throws(() => range('2000'), /lo-hi/)
  assert.throws(() => range('9-1'), /lo-hi/)
  assert.throws(() => weights('list'), /name:weight/)
})

test('routes are drawn in proportion to their weights', () => {
  const rand = seeded(1)
  const mix = weights('list:2,product:3,styles:3,related:2')
  for (const [key, w] of mix) near(share(() => weighted(rand, mix), (k) => k === key), w / 10, 0.01, key)
})

test('uniform ids cover the whole range and nothing outside it', () => {
  const rand = seeded(2)
  const seen = new Set()
  for (let i = 0; i < N; i++) {
    const v = uniform(rand, 1, 50)
    assert.ok(v >= 1 && v <= 50)
    seen.add(v)
  }
  assert.equal(seen.size, 50)
})

test('the profile seed\'s reads: 75% on 20 hot ids spread over the range, 25% uniform', () => {
  const rand = seeded(3)
  const hot = spread(1, 1_000_000, 20)
  assert.equal(new Set(hot).size, 20)
  assert.ok(hot[0] > 1 && hot.at(-1) < 1_000_000, 'spread over the range, not its first rows')
  const hotSet = new Set(hot)
  near(share(() => hotOrUniform(rand, { hot, share: 0.75, lo: 1, hi: 1_000_000 }), (id) => hotSet.has(id)),
    0.75, 0.01, 'hot share')
  assert.deepEqual(spread(1, 5, 20), [1, 2, 3, 4, 5], 'a range smaller than the hot set is all hot')
})

test('the journal\'s pages: 10% of requests on the last 10% of pages, the rest uniform over all', () => {
  const rand = seeded(4)
  const pages = 200_000
  const tail = (p) => p > pages * 0.9
  // 10% forced into the tail, plus the uniform 90%'s own 10% that falls there.
  near(share(() => page(rand, pages), tail), 0.1 + 0.9 * 0.1, 0.01, 'share on the last 10%')
  near(share(() => page(rand, pages), (p) => p <= pages / 2), 0.9 * 0.5, 0.01, 'share on the first half')
  for (let i = 0; i < 1000; i++) {
    const p = page(rand, 3)
    assert.ok(p >= 1 && p <= 3)
  }
  assert.equal(page(rand, 1), 1)
})
