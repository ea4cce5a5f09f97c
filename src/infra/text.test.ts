import assert from 'node:assert/strict';
import { test } from 'node:test';
import { foldText, searchDocument, searchFold, searchForm } from './text.ts';

test('folds accents, case and punctuation so spellings of one name compare equal', () => {
  assert.equal(foldText('Köln'), 'koln');
  assert.equal(foldText("Café  de l'Opéra"), 'cafe de l opera');
  assert.equal(foldText('Straße'), 'strasse');
  assert.equal(foldText('Øresund'), 'oresund');
});

test('keeps non-Latin scripts and folds full-width forms', () => {
  assert.equal(foldText('東京駅'), '東京駅');
  assert.equal(foldText('ＡＢＣ'), 'abc');
  assert.equal(foldText('Москва'), 'москва');
});

test('folds the letters Unicode does not decompose, upper and lower case alike', () => {
  assert.equal(foldText('NØR Łódź ÆBLE Đuro Dıyarbakır Þór Ħamrun ẞ'), 'nor lodz aeble duro diyarbakir thor hamrun ss');
  assert.equal(foldText('İstanbul'), 'istanbul');
});

test('sets the letters of scripts written without spaces apart in the search form', () => {
  assert.equal(searchForm('ドトールコーヒー新宿店'), 'ド ト ー ル コ ー ヒ ー 新 宿 店');
  assert.equal(searchForm('7-Eleven 新宿'), '7 eleven 新 宿');
  assert.equal(searchForm('Café Ñandú'), 'cafe nandu');
  assert.equal(searchForm('Москва'), 'москва');
});

test('writes a search document of every distinct name between marks, the display name first', () => {
  assert.equal(
    searchDocument('Café Ñandú', JSON.stringify({ en: 'Cafe Nandu', alt: ['Ñandú', ['カフェ']], n: 3 })),
    '$ cafe nandu $ nandu $ カ フ ェ $',
  );
  assert.equal(searchDocument('Ratskeller', null), '$ ratskeller $');
  assert.equal(searchDocument('..', 'not json'), '$ $');
});

test('folds plain ASCII text the short way to what the full folding gives', () => {
  for (const text of ["Domino's Pizza #12", '  R-KIOSKI  ', 'Cafe_de-la Paix!', '7-ELEVEN', '', '...'])
    assert.equal(searchFold(text), foldText(text), text);
});
