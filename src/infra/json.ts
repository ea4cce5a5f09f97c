/**
 * JSON text of an object that is never changed after it is made (a resolved search's criteria and
 * resolution, shared by every request for the same search), written once and remembered with the object.
 */
const texts = new WeakMap<object, string>();

export function jsonOf(value: object): string {
  let text = texts.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    texts.set(value, text);
  }
  return text;
}

/** Freezes an object and everything in it, so "never changed" is enforced rather than hoped for. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
