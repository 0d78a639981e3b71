import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sharedReads } from '../src/pg.js'

// A load that the test ends by hand: loads[i] is the i-th load started, with its key.
function loader () {
  const loads = []
  const load = (key) => () => {
    const l = { key, ...Promise.withResolvers() }
    loads.push(l)
    return l.promise
  }
  return { loads, load }
}
const settled = (p) => p.then((value) => ({ value }), (error) => ({ error: error.message }))
const turn = () => new Promise((resolve) => setImmediate(resolve))

test('a read alone loads at once; reads arriving while it is in flight share the next load, never that one', async () => {
  const read = sharedReads()
  const { loads, load } = loader()
  const a = read('page', load('page'))
  assert.equal(loads.length, 1, 'the first read starts its load at once')
  const b = read('page', load('page'))
  const c = read('page', load('page'))
  assert.equal(loads.length, 1, 'reads during a load in flight start none of their own')
  loads[0].resolve('before b and c arrived')
  assert.equal(await a, 'before b and c arrived')
  await turn()
  assert.equal(loads.length, 2, 'b and c share one load, started once the first one ended')
  const d = read('page', load('page')) // arrives while b and c's load is in flight: the one after
  loads[1].resolve('after b and c arrived')
  assert.deepEqual([await b, await c], ['after b and c arrived', 'after b and c arrived'])
  await turn()
  assert.equal(loads.length, 3)
  loads[2].resolve('after d arrived')
  assert.equal(await d, 'after d arrived')
  await turn()
  assert.equal(loads.length, 3, 'no load without a read waiting')
  const e = read('page', load('page'))
  assert.equal(loads.length, 4, 'a read after they all ended loads at once again')
  loads[3].resolve('e')
  assert.equal(await e, 'e')
})

test('other keys load on their own; a failed load fails only the reads that shared it', async () => {
  const read = sharedReads()
  const { loads, load } = loader()
  const a = settled(read('x', load('x')))
  const other = read('y', load('y'))
  assert.deepEqual(loads.map((l) => l.key), ['x', 'y'])
  const b = settled(read('x', load('x')))
  loads[0].reject(new Error('connection lost'))
  assert.deepEqual(await a, { error: 'connection lost' })
  await turn()
  loads[2].resolve('x again')
  assert.deepEqual(await b, { value: 'x again' })
  loads[1].resolve('y')
  assert.equal(await other, 'y')
  // A load that throws before it returns a promise fails its reads the same way, and the key goes on.
  assert.deepEqual(await settled(read('z', () => { throw new Error('bad query') })), { error: 'bad query' })
  assert.equal(await read('z', async () => 'z'), 'z')
})
