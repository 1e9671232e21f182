// Turns the OpenAPI (swagger 2.0) document of the Kubernetes API into the JSON schemas kubeconform
// reads, one file per kind in its layout (`<kind>[-<group>]-<version>.json`, e.g.
// deployment-apps-v1.json, service-v1.json), made strict: every object that lists its properties
// refuses any other (additionalProperties: false), as kubeconform's "-strict" schemas do.
//
//   node scripts/infra/k8s-schemas.mjs <swagger.json> <out dir>
//
// scripts/infra/lib.sh (fetch_k8s_schemas) runs it on api/openapi-spec/swagger.json of the
// k8s.io/kubernetes module, fetched from the Go module proxy. Each file is self-contained: the kind's
// schema with, under `definitions`, every definition it reaches ($ref `#/definitions/<name>`), so a
// recursive type (JSONSchemaProps) needs no inlining. kubeconform compiles them as draft 4.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [specFile, outDir] = process.argv.slice(2);
if (!specFile || !outDir) {
  console.error('usage: node scripts/infra/k8s-schemas.mjs <swagger.json> <out dir>');
  process.exit(2);
}
const definitions = JSON.parse(readFileSync(specFile, 'utf8')).definitions;
const REF = '#/definitions/';

// What the API server accepts for these, beyond the string the document names: `port: 8080`,
// `cpu: 1`. The document marks them only by name or format.
const special = (name, schema) => {
  if (schema.format === 'int-or-string') return { anyOf: [{ type: 'string' }, { type: 'integer' }] };
  if (name === 'io.k8s.apimachinery.pkg.api.resource.Quantity')
    return { anyOf: [{ type: 'string' }, { type: 'number' }] };
  return null;
};

/** a copy without descriptions and vendor extensions, each listed object closed to other fields */
const strict = (node) => {
  if (Array.isArray(node)) return node.map(strict);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'description' || key.startsWith('x-')) continue;
    // property names are data, not keywords: copy the map, make each property's schema strict
    out[key] =
      key === 'properties' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, strict(v)])) : strict(value);
  }
  const open = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (out.properties && out.additionalProperties === undefined && !open) out.additionalProperties = false;
  return out;
};

const converted = new Map();
const convert = (name) => {
  if (!converted.has(name)) {
    const schema = definitions[name];
    if (!schema) throw new Error(`the document refers to ${name}, which it does not define`);
    converted.set(name, special(name, schema) ?? strict(schema));
  }
  return converted.get(name);
};

/** the names of every definition `schema` reaches */
const reachable = (schema, seen = new Set()) => {
  const walk = (node) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== 'object') return;
    if (typeof node.$ref === 'string' && node.$ref.startsWith(REF)) {
      const name = node.$ref.slice(REF.length);
      if (!seen.has(name)) {
        seen.add(name);
        walk(convert(name));
      }
    }
    Object.values(node).forEach(walk);
  };
  walk(schema);
  return seen;
};

const fileOf = ({ group, version, kind }) =>
  `${[kind, group.split('.')[0], version].filter(Boolean).join('-').toLowerCase()}.json`;

mkdirSync(outDir, { recursive: true });
let written = 0;
const seenFiles = new Set();
for (const [name, schema] of Object.entries(definitions)) {
  for (const gvk of schema['x-kubernetes-group-version-kind'] ?? []) {
    // DeleteOptions, WatchEvent… name every group; the type defined for the kind itself wins
    if (!name.endsWith(`.${gvk.kind}`)) continue;
    const file = fileOf(gvk);
    if (seenFiles.has(file)) continue;
    seenFiles.add(file);
    const root = structuredClone(convert(name));
    const apiVersion = gvk.group ? `${gvk.group}/${gvk.version}` : gvk.version;
    if (root.properties?.apiVersion) root.properties.apiVersion = { type: 'string', enum: [apiVersion] };
    if (root.properties?.kind) root.properties.kind = { type: 'string', enum: [gvk.kind] };
    const refs = [...reachable(root)].sort();
    root.definitions = Object.fromEntries(refs.map((ref) => [ref, convert(ref)]));
    writeFileSync(join(outDir, file), JSON.stringify(root));
    written += 1;
  }
}
if (written < 50) {
  console.error(`k8s-schemas: only ${written} kinds in ${specFile}; is it the Kubernetes API document?`);
  process.exit(1);
}
console.log(`k8s-schemas: ${written} kinds into ${outDir}`);
