// Stand-in for k6/execution: the iteration number comes from globalThis.k6stub.iteration.
export default {
  scenario: { get iterationInTest () { return globalThis.k6stub.iteration } }
}
