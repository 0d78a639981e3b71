// Restaurant profiles (Grubby Hub): reads with 75% on 20 hot ids and 25% uniform, as the seed
// measured, on the API and the original client's /profile path; plus writes — POST a new
// restaurant, or read-modify-write an existing one with PUT / PATCH and If-Match (a GET for the
// ETag first, as a real client does, so such an iteration is two requests).
//   k6 run --no-usage-report -e BASE_URL=http://localhost:3001 -e RATE=100 loadtests/k6/profile.js
// IDS: the id range (npm start: 1-2000); HOT_IDS (20) ids spread over it get HOT_SHARE (0.75) of the reads;
// WRITE_SHARE (0.1) of the iterations write, split by WRITE_MIX; READ_MIX: the two read routes.
import { options as optionsFor, setting, number, baseUrl, request } from './lib.js'
import { range, weights, weighted, spread, hotOrUniform, uniform } from './mix.js'

const S = 'profile'
export const options = optionsFor(S)

const [lo, hi] = range(setting(S, 'IDS', '1-2000'))
const reads = { hot: spread(lo, hi, number(S, 'HOT_IDS', 20)), share: number(S, 'HOT_SHARE', 0.75), lo, hi }
const writeShare = number(S, 'WRITE_SHARE', 0.1)
const readMix = weights(setting(S, 'READ_MIX', 'restaurant:4,profile:1'))
const writeMix = weights(setting(S, 'WRITE_MIX', 'post:1,put:2,patch:2'))
const base = baseUrl(S)

const restaurant = (n) => ({
  name: `Load Test Kitchen ${n}`,
  address: `${n} Main St, Springfield`,
  phone: '(555) 010-0000',
  picture: `https://images.example/${n}.jpg`,
  cuisine: 'Thai',
  price_range: 1 + (n % 4),
  stars: (n % 51) / 10,
  quality: n % 101,
  delivery: (n * 7) % 101,
  accuracy: (n * 13) % 101
})

function write (url) {
  const kind = weighted(Math.random, writeMix)
  const n = Math.floor(Math.random() * 1e9)
  if (kind === 'post') return request('POST', `${url}/restaurants`, { name: 'POST /restaurants', body: restaurant(n) })
  const id = uniform(Math.random, lo, hi)
  const current = request('GET', `${url}/restaurants/${id}`, { name: 'GET /restaurants/:id', allow: '404' })
  if (current.status !== 200) return current
  const body = kind === 'put' ? restaurant(n) : { quality: n % 101 }
  return request(kind.toUpperCase(), `${url}/restaurants/${id}`, {
    name: `${kind.toUpperCase()} /restaurants/:id`, body, headers: { 'if-match': current.headers.Etag }, allow: '412'
  })
}

export function profile () {
  const url = base()
  if (Math.random() < writeShare) return write(url)
  const id = hotOrUniform(Math.random, reads)
  const compat = weighted(Math.random, readMix) === 'profile'
  return request('GET', `${url}/restaurants/${id}${compat ? '/profile' : ''}`, { name: `GET /restaurants/:id${compat ? '/profile' : ''}`, allow: '404' })
}
export default profile
