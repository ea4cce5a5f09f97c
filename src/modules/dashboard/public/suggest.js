// Suggestions as one types: an input with data-suggest="name|category|city" fills its <datalist> with what the
// catalog holds that starts like its text (GET /search/suggest: the API's autocomplete, most places first),
// within the country field's country when it names one. Without this script the form works as before.

const timers = new WeakMap();
const asked = new WeakMap();

document.addEventListener('input', (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || !input.dataset.suggest || !input.list) return;
  clearTimeout(timers.get(input));
  timers.set(
    input,
    setTimeout(() => suggest(input), 150),
  );
});

const placesLabel = (n) => `${n} place${n === 1 ? '' : 's'}`;

function labelOf(kind, s) {
  if (kind === 'city') return `${s.country}${s.matched ? ` (${s.matched})` : ''} · ${placesLabel(s.count)}`;
  return placesLabel(s.count);
}

async function suggest(input) {
  const q = input.value.trim();
  if (q.length === 0) return;
  const kind = input.dataset.suggest;
  const params = new URLSearchParams({ kind, q, limit: '8' });
  const country = input.form?.elements.namedItem('country');
  if (country instanceof HTMLInputElement && country !== input && country.value.trim().length >= 2)
    params.set('country', country.value.trim());
  const request = (asked.get(input) ?? 0) + 1;
  asked.set(input, request);
  let body;
  try {
    const res = await fetch(`/search/suggest?${params}`, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!res.ok) return;
    body = await res.json();
  } catch {
    return;
  }
  // An answer to an older text is dropped: the user typed on.
  if (asked.get(input) !== request) return;
  input.list.replaceChildren(
    ...body.data.map((s) => {
      const option = document.createElement('option');
      option.value = s.value;
      option.label = labelOf(kind, s);
      option.dataset.count = String(s.count);
      return option;
    }),
  );
}
