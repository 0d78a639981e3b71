import { test } from 'node:test'
import assert from 'node:assert/strict'
import { sharedReads, batchedLoads } from '../src/data/coalescing.js'

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

test('a read alone loads at once; reads arriving while it is in flight share the next load, ' +
  'never that one', async () => {
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

test('batchedLoads: the ids of one turn go out as one load, each read gets its own row or undefined', async () => {
  const calls = []
  const load = batchedLoads(async (ids) => {
    calls.push(ids)
    return new Map(ids.filter((id) => id !== 404).map((id) => [id, { id }]))
  })
  const reads = [load(1), load(2), load(404), load(2)]
  assert.equal(calls.length, 0, 'nothing is sent before the turn ends')
  assert.deepEqual(await Promise.all(reads), [{ id: 1 }, { id: 2 }, undefined, { id: 2 }])
  assert.deepEqual(calls, [[1, 2, 404]], 'one load, each id once')
  assert.deepEqual(await load(3), { id: 3 })
  assert.deepEqual(calls, [[1, 2, 404], [3]], 'a read in a later turn is a load of its own')
})

test('batchedLoads: a failed load fails every read of its batch and none of the next; ' +
  'a batch holds at most `max` ids', async () => {
  let fail = true
  const calls = []
  const load = batchedLoads(async (ids) => {
    calls.push(ids)
    if (fail) throw new Error('PostgreSQL unreachable')
    return new Map(ids.map((id) => [id, id]))
  }, { max: 2 })
  assert.deepEqual(
    await Promise.all([1, 2].map((id) => settled(load(id)))),
    [{ error: 'PostgreSQL unreachable' }, { error: 'PostgreSQL unreachable' }]
  )
  fail = false
  assert.deepEqual(await Promise.all([1, 2, 3, 4, 5].map(load)), [1, 2, 3, 4, 5])
  assert.deepEqual(calls.slice(1), [[1, 2], [3, 4], [5]])
})
