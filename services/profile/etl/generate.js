// A deterministic, faker-like generator of restaurants.csv at any scale (word lists + a seeded PRNG,
// no dependency). A few planted rows must be rejected; manifest.json counts them by reason.
//   node services/profile/src/cli.js generate --out DIR --restaurants N [--seed S]
import { createWriteStream } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { join } from 'node:path'

// mulberry32, as in the product generator: the same sequence for the same seed everywhere.
function prng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const FIRST = ['Joe\'s', 'Mama\'s', 'The Golden', 'Little', 'Big', 'Blue', 'Café', 'Le Petit', 'El', 'Old Town', 'Señor', 'Happy', 'Lucky', 'Green', 'Royal', 'Smokin\'']
const SECOND = ['Dragon', 'Kitchen', 'Bistro', 'Grill', 'Noodle', 'Taqueria', 'Diner', 'Pizzeria', 'Sushi', 'Crêperie', 'Garden', 'Table', 'Spoon', 'Wok', 'Oven', 'Fork']
const CUISINES = ['American', 'Chinese', 'Mexican', 'Italian', 'Japanese', 'Thai', 'Indian', 'French', 'Greek', 'Korean', 'Vietnamese', 'Mediterranean', 'Ethiopian', 'Peruvian']
const STREETS = ['Main St', 'Oak Ave', 'Market St', 'Mission St', 'Broadway', 'Elm St', 'Pine St', 'Valencia St', 'Sunset Blvd', 'Lake Rd']
const CITIES = ['San Francisco, CA', 'Oakland, CA', 'Austin, TX', 'Seattle, WA', 'Brooklyn, NY', 'Chicago, IL', 'Denver, CO', 'Portland, OR']

// A CSV field: quoted when it holds a comma or a quote (doubled inside).
const csv = (s) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s)

/** Writes restaurants.csv and manifest.json into `out`; resolves to the manifest. */
export async function generate ({ out, restaurants, seed = 1 }) {
  await mkdir(out, { recursive: true })
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  const pick = (list) => list[int(list.length)]
  const rejects = {}
  const expect = (reason) => { rejects[reason] = (rejects[reason] ?? 0) + 1 }
  const stream = createWriteStream(join(out, 'restaurants.csv'))
  let buffer = 'id,name,address,phone,picture,cuisine,price_range,stars,quality,delivery,accuracy\n'
  let rows = 0

  for (let id = 1; id <= restaurants; id++) {
    const name = `${pick(FIRST)} ${pick(SECOND)}`
    const address = `${100 + int(9900)} ${pick(STREETS)}, ${pick(CITIES)} ${10000 + int(89999)}`
    const phone = `(${200 + int(800)}) ${100 + int(900)}-${String(int(10000)).padStart(4, '0')}`
    const stars = (int(51) / 10).toFixed(1)
    let line = `${id},${csv(name)},${csv(address)},${phone},https://picsum.photos/seed/${id}/400/300,${pick(CUISINES)},${1 + int(4)},${stars},${int(101)},${int(101)},${int(101)}`
    // Quirks at fixed places, so small sets have them too: a bad number and a repeated id.
    if (id === 7) { line = line.replace(/,[\d.]+,(\d+),(\d+),(\d+)$/, ',four,$1,$2,$3'); expect('invalid_stars') }
    buffer += line + '\n'
    rows++
    if (id === 9) { buffer += `9,Duplicate of nine,1 Main St,(555) 555-5555,https://example.com/9.jpg,Thai,2,3.0,50,50,50\n`; rows++; expect('duplicate_id') }
    if (buffer.length >= 1 << 20) {
      if (!stream.write(buffer)) await once(stream, 'drain')
      buffer = ''
    }
  }
  stream.end(buffer)
  await finished(stream)
  const manifest = { seed, restaurants, files: { 'restaurants.csv': { rows, rejects } } }
  await writeFile(join(out, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n')
  return manifest
}
