// Copy buttons: <button data-copy="ID"> copies the value (or text) of the element with that id and
// announces the result in the .copy-status[data-for=ID] live region.

document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  const value = 'value' in source ? source.value : source.textContent;
  const status = document.querySelector(`.copy-status[data-for="${source.id}"]`);
  let copied = false;
  try {
    await navigator.clipboard.writeText(value);
    copied = true;
  } catch {
    // Without clipboard permission (plain http, older browsers): select the text for Ctrl+C.
    if ('select' in source) source.select();
    else window.getSelection().selectAllChildren(source);
  }
  button.dataset.copied = copied ? 'true' : 'false';
  if (status) status.textContent = copied ? 'Copied to the clipboard.' : 'Selected: press Ctrl+C (⌘C on a Mac) to copy.';
  if (copied) {
    const label = button.textContent;
    button.textContent = 'Copied ✓';
    setTimeout(() => {
      button.textContent = label;
    }, 2000);
  }
});
