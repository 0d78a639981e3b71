// Stand-in for k6/http: records each request in globalThis.k6stub.requests and answers with
// globalThis.k6stub.respond(request) (default: 200).
export default {
  request (method, url, body, params) {
    const stub = globalThis.k6stub
    const request = { method, url, body, params }
    const res = stub.respond?.(request) ?? { status: 200, headers: {} }
    stub.requests.push(request)
    return res
  },
  expectedStatuses (...statuses) {
    return { expectedStatuses: statuses }
  }
}
