import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The backend's folders depend on each other one way (docs/ARCHITECTURE.md): transport → chat →
// agent → (llm | tools | prompts | store) → config. Read from the sources' relative imports.
const source = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'backend', 'src');

function backendFiles(dir = source): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return backendFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The backend's top folder a file is in (a file at the top is a folder of its own). */
const folderOf = (path: string) => relative(source, path).split('/')[0]!;

const files = backendFiles().map((path) => {
  const text = readFileSync(path, 'utf8');
  const imports = [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((match) => match[1]!);
  return { path, folder: folderOf(path), imports };
});

/** Which folder imports which, with one file that does for each pair. */
const edges = new Map<string, Map<string, string>>();
for (const file of files) {
  for (const specifier of file.imports.filter((name) => name.startsWith('.'))) {
    const target = folderOf(normalize(join(dirname(file.path), specifier)));
    if (target === file.folder) continue;
    const from = edges.get(file.folder) ?? new Map<string, string>();
    if (!from.has(target)) from.set(target, relative(source, file.path));
    edges.set(file.folder, from);
  }
}

/** A cycle among the folders (each step naming a file that makes it), or undefined. */
function findCycle(): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (folder: string): string[] | undefined => {
    if (state.get(folder) === 'done') return undefined;
    if (state.get(folder) === 'open') return [...path.slice(path.indexOf(folder)), folder];
    state.set(folder, 'open');
    path.push(folder);
    for (const target of edges.get(folder)?.keys() ?? []) {
      const cycle = visit(target);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(folder, 'done');
    return undefined;
  };
  for (const folder of edges.keys()) {
    const cycle = visit(folder);
    if (cycle) return cycle.map((name, index) => (index + 1 < cycle.length ? `${name} (${edges.get(name)!.get(cycle[index + 1]!)})` : name));
  }
  return undefined;
}

describe('the backend’s dependency rule', () => {
  it('has no import cycle between its folders: every import points one way', () => {
    expect(findCycle()).toBeUndefined();
  });

  it('keeps the core free of the transport: no Fastify, ws or transport/ under chat, agent, llm, tools, prompts or store', () => {
    const core = new Set(['chat', 'agent', 'llm', 'tools', 'prompts', 'store']);
    const offending = files
      .filter((file) => core.has(file.folder))
      .flatMap((file) =>
        file.imports
          .filter(
            (name) => /^(fastify|@fastify\/|ws$)/.test(name) || (name.startsWith('.') && folderOf(normalize(join(dirname(file.path), name))) === 'transport'),
          )
          .map((name) => `${relative(source, file.path)} imports ${name}`),
      );
    expect(offending).toEqual([]);
  });
});
