#!/usr/bin/env node
// Writes src/models.ts, the kit's wire types, from the JSON Schemas the product publishes
// (docs/schemas/*.json) and the components of docs/openapi.json that the kit's HTTP client reads
// and writes. Node only, no dependencies.
//
//   node scripts/generate.mjs            # (re)write src/models.ts
//   node scripts/generate.mjs --check    # exit 1, naming the first difference, when src/models.ts
//                                        # is not what the schemas give (CI: a schema change the
//                                        # kit does not follow fails)
//   --schemas DIR --openapi FILE --out FILE   # other inputs or output (the generator's own test)
//
// Every object schema becomes an `interface` with the wire's camelCase member names (a member
// outside `required` is optional); a `oneOf` of constants becomes a union of string literals. A
// name defined by several schemas (Subject is in most of them) is emitted once; two definitions
// of one name that differ in shape stop the generator (exit 2), naming both places. Exit 2 on
// an unreadable input or a schema construct it does not know, with the reason.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const KIT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = join(KIT, '..', '..');

/** The components of docs/openapi.json the kit's client uses (with what they reference). */
const OPENAPI_ROOTS = [
  'FactsOutcome',
  'LapsesPage',
  'RetryRequest',
  'RetryAnswer',
  'SubjectView',
  'PushOutcome',
  'RejectionsPage',
  'Problem',
];

class GenerateError extends Error {}

function parseArgs(argv) {
  const opts = {
    check: false,
    schemas: join(ROOT, 'docs', 'schemas'),
    openapi: join(ROOT, 'docs', 'openapi.json'),
    out: join(KIT, 'src', 'models.ts'),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') opts.check = true;
    else if (a === '--schemas' || a === '--openapi' || a === '--out') {
      const v = argv[++i];
      if (!v) throw new GenerateError(`${a} needs a value`);
      opts[a.slice(2)] = v;
    } else throw new GenerateError(`unknown argument ${JSON.stringify(a)} (see the header of scripts/generate.mjs)`);
  }
  return opts;
}

function readJson(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new GenerateError(`cannot read ${path}: ${e.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new GenerateError(`${path} is not JSON: ${e.message}`);
  }
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A JSDoc comment (indented by `pad`) holding `text`, or nothing. */
function doc(text, pad) {
  if (typeof text !== 'string' || !text.trim()) return '';
  const lines = text.replace(/\*\//g, '*\u2215').trim().split('\n');
  if (lines.length === 1) return `${pad}/** ${lines[0].trim()} */\n`;
  return `${pad}/**\n${lines.map((l) => `${pad} *${l.trim() ? ` ${l.trim()}` : ''}`).join('\n')}\n${pad} */\n`;
}

/**
 * One input document: its $defs and (for docs/openapi.json) its components resolve its `$ref`s.
 * `where` names it in messages.
 */
class Doc {
  constructor(where, defs, refBase) {
    this.where = where;
    this.defs = defs ?? {};
    this.refBase = refBase; // '#/$defs/' or '#/components/schemas/'
  }
}

class Generator {
  constructor(schemaTitles) {
    /** name -> { text (declaration without comments), full (with comments), where } */
    this.decls = new Map();
    this.order = [];
    /** `schemas/Fact.json` (a reference from docs/openapi.json) -> its title. */
    this.schemaTitles = schemaTitles;
  }

  /** The name a `$ref` in `d` stands for, declaring it first when it is one of `d`'s own. */
  ref(ref, d) {
    if (ref.startsWith(d.refBase)) {
      const name = ref.slice(d.refBase.length);
      const target = d.defs[name];
      if (target === undefined) throw new GenerateError(`${d.where}: ${ref} names nothing`);
      this.declare(name, target, d);
      return name;
    }
    const file = basename(ref);
    const title = this.schemaTitles.get(file);
    if (title) return title;
    throw new GenerateError(`${d.where}: cannot resolve $ref ${JSON.stringify(ref)}`);
  }

  /** The TypeScript type of `s`, written inline, at indentation `pad`. */
  type(s, d, pad) {
    if (s === true || s === undefined) return 'unknown';
    if (s === false) return 'never';
    if (typeof s !== 'object' || s === null) throw new GenerateError(`${d.where}: not a schema: ${JSON.stringify(s)}`);
    if (s.$ref) return this.ref(s.$ref, d);
    if ('const' in s) return JSON.stringify(s.const);
    if (Array.isArray(s.enum)) return union(s.enum.map((v) => JSON.stringify(v)));
    const alts = s.oneOf ?? s.anyOf;
    if (Array.isArray(alts)) return union(alts.map((a) => this.type(a, d, pad)));
    const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
    if (types.length === 0) {
      if (s.properties) return this.type({ ...s, type: 'object' }, d, pad);
      return 'unknown';
    }
    return union(types.map((t) => this.simple(t, s, d, pad)));
  }

  simple(t, s, d, pad) {
    switch (t) {
      case 'null':
        return 'null';
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'array': {
        const item = this.type(s.items, d, pad);
        return /[|&\s]/.test(item) && !item.startsWith('{') ? `(${item})[]` : `${item}[]`;
      }
      case 'object': {
        if (s.properties) return this.members(s, d, pad);
        const extra = s.additionalProperties;
        if (extra && typeof extra === 'object') return `{ [key: string]: ${this.type(extra, d, pad)} }`;
        return 'Record<string, unknown>';
      }
      default:
        throw new GenerateError(`${d.where}: unknown type ${JSON.stringify(t)}`);
    }
  }

  /** `{ member: type; ... }` for an object schema with `properties`. */
  members(s, d, pad) {
    const required = new Set(s.required ?? []);
    const inner = `${pad}  `;
    let out = '{\n';
    for (const [name, p] of Object.entries(s.properties)) {
      const key = IDENT.test(name) ? name : JSON.stringify(name);
      out += doc(p?.description, inner);
      out += `${inner}${key}${required.has(name) ? '' : '?'}: ${this.type(p, d, inner)};\n`;
    }
    return `${out}${pad}}`;
  }

  /** Declares `name` as `s` (from `d`), once. */
  declare(name, s, d) {
    if (!IDENT.test(name)) throw new GenerateError(`${d.where}: ${JSON.stringify(name)} is not a type name`);
    const seen = this.decls.get(name);
    if (seen?.pending) return; // a reference back to a declaration under way
    // Declared already: only the shape is compared (the text without its comments).
    this.decls.set(name, seen ?? { pending: true });
    const isObject = s && typeof s === 'object' && s.properties && !s.oneOf && !s.anyOf;
    const body = isObject ? this.members(s, d, '') : this.type(s, d, '');
    const full = isObject
      ? `${doc(s.description, '')}export interface ${name} ${body}\n`
      : `${doc(s.description, '')}export type ${name} = ${body};\n`;
    const shape = stripComments(full);
    if (seen) {
      if (seen.shape !== shape) {
        throw new GenerateError(
          `${name} is defined differently in ${seen.where} and ${d.where}:\n${seen.shape}\n${shape}`,
        );
      }
      return;
    }
    this.decls.set(name, { shape, full, where: d.where });
    this.order.push(name);
  }
}

function union(parts) {
  const uniq = [...new Set(parts)];
  return uniq.join(' | ');
}

function stripComments(text) {
  return text
    .split('\n')
    .filter((l) => !/^\s*(\/\*\*|\*)/.test(l))
    .join('\n');
}

export function generate(opts) {
  const files = readdirSync(opts.schemas)
    .filter((f) => f.endsWith('.json'))
    .sort();
  if (files.length === 0) throw new GenerateError(`no *.json in ${opts.schemas}`);
  const schemas = files.map((f) => [f, readJson(join(opts.schemas, f))]);
  const titles = new Map();
  for (const [f, s] of schemas) {
    const title = typeof s.title === 'string' ? s.title : f.replace(/\.json$/, '');
    titles.set(f, title);
  }
  const g = new Generator(titles);
  const rel = (p) => relative(ROOT, p) || p;
  for (const [f, s] of schemas) {
    const d = new Doc(rel(join(opts.schemas, f)), s.$defs, '#/$defs/');
    g.declare(titles.get(f), s, d);
    for (const [name, def] of Object.entries(s.$defs ?? {})) g.declare(name, def, d);
  }
  const fromSchemas = g.order.length;
  const api = readJson(opts.openapi);
  const components = api?.components?.schemas;
  if (!components) throw new GenerateError(`${opts.openapi} has no components.schemas`);
  const d = new Doc(rel(opts.openapi), components, '#/components/schemas/');
  for (const name of OPENAPI_ROOTS) {
    if (!components[name]) throw new GenerateError(`${opts.openapi}: no component ${name}`);
    g.declare(name, components[name], d);
  }
  const decl = (names) => names.map((n) => g.decls.get(n).full).join('\n');
  return [
    '// generated from docs/schemas; do not edit.',
    '// `npm run generate` (scripts/generate.mjs) writes this file from docs/schemas/*.json and the',
    "// components of docs/openapi.json the client uses; `npm run check:models` fails when it differs.",
    '// Member names are the wire\'s (camelCase); a member outside the schema\'s `required` is optional.',
    '',
    decl(g.order.slice(0, fromSchemas)),
    '// The watcher\'s HTTP API (docs/openapi.json, components).',
    '',
    decl(g.order.slice(fromSchemas)),
  ].join('\n');
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const text = generate(opts);
  if (!opts.check) {
    writeFileSync(opts.out, text);
    console.log(`wrote ${relative(process.cwd(), opts.out) || opts.out}`);
    return 0;
  }
  let old = '';
  try {
    old = readFileSync(opts.out, 'utf8');
  } catch {
    // a missing file differs like any other
  }
  if (old === text) {
    console.log(`${opts.out} follows the schemas`);
    return 0;
  }
  const a = old.split('\n');
  const b = text.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  console.error(
    `${opts.out} does not follow the schemas: line ${i + 1} is\n  ${JSON.stringify(a[i] ?? '(end of file)')}\n` +
      `where the schemas give\n  ${JSON.stringify(b[i] ?? '(end of file)')}\n` +
      'run `npm run generate` in kits/typescript and update the kit for the change',
  );
  return 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    process.exitCode = main();
  } catch (e) {
    if (!(e instanceof GenerateError)) throw e;
    console.error(`generate: ${e.message}`);
    process.exitCode = 2;
  }
}
