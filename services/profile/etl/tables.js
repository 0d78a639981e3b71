// restaurants.csv and how it maps to its table; types and keys are checked by the kit's loader
// (services/kit/src/etl/load.js, the types in column-types.js). Ranges beyond the types (price_range
// 1–4, 0–100 scores) are guaranteed by the generator and enforced by the table's CHECKs.
export const tables = [
  {
    file: 'restaurants.csv',
    table: 'restaurants',
    columns: {
      id: 'id', name: 'text', address: 'text', phone: 'text', picture: 'text', cuisine: 'text',
      price_range: 'count', stars: 'price', quality: 'count', delivery: 'count', accuracy: 'count'
    },
    primaryKey: 'id',
    sequence: 'restaurants_id_seq' // POST takes ids from it: past every loaded one
  }
]
