// Vitest 5 targets Node 22+; on Node 20 its reporter needs Map.groupBy and Object.groupBy.
// Both are standard (ES2024), so filling them in changes nothing on newer Node versions.
const groupBy = <K, T>(items: Iterable<T>, key: (item: T, index: number) => K): Map<K, T[]> => {
  const groups = new Map<K, T[]>();
  let index = 0;
  for (const item of items) {
    const group = key(item, index++);
    const list = groups.get(group);
    if (list) list.push(item);
    else groups.set(group, [item]);
  }
  return groups;
};

const mapConstructor = Map as unknown as { groupBy?: typeof groupBy };
mapConstructor.groupBy ??= groupBy;
const objectConstructor = Object as unknown as { groupBy?: unknown };
objectConstructor.groupBy ??= <K extends PropertyKey, T>(items: Iterable<T>, key: (item: T, index: number) => K) =>
  Object.assign(Object.create(null), Object.fromEntries(groupBy(items, key)));

export {};
