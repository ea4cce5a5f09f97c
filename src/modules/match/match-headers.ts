import { foldText } from '../../infra/text.ts';
import { readFieldLabels } from '../taxonomy/taxonomy.ts';

/** The fields of a record that a column of a list can fill (`MatchRecordSchema` less `ref`, which is the row). */
export const listFields = [
  'name',
  'address',
  'street',
  'housenumber',
  'postcode',
  'city',
  'country',
  'phone',
  'website',
  'email',
  'lat',
  'lon',
] as const;
export type ListField = (typeof listFields)[number];

/** Which header of the list fills which field. */
export type ColumnMapping = Partial<Record<ListField, string>>;

/**
 * The names CRMs and spreadsheets give these columns, in the languages of the lists we see most. They come
 * before the taxonomy's labels (`readFieldLabels`), which add every other language the taxonomy ships; where
 * both name a header, this list decides (the editor's search terms of `name` include words such as `title`).
 */
const usualHeaders: Record<ListField, readonly string[]> = {
  name: [
    'name',
    'company',
    'company name',
    'account',
    'account name',
    'business',
    'business name',
    'organisation',
    'organization',
    'customer',
    'client',
    'firma',
    'firmenname',
    'unternehmen',
    'kunde',
    'empresa',
    'nome',
    'nome da empresa',
    'razao social',
    'nombre',
    'nombre de la empresa',
    'nom',
    'nom de l entreprise',
    'raison sociale',
    'societe',
    'entreprise',
    'ragione sociale',
    'azienda',
    'denominazione',
    'bedrijf',
    'bedrijfsnaam',
    'naam',
    'nazwa',
    'nazwa firmy',
  ],
  address: [
    'address',
    'street address',
    'adresse',
    'anschrift',
    'direccion',
    'domicilio',
    'morada',
    'endereco',
    'indirizzo',
    'adres',
    'address line 1',
  ],
  street: ['street', 'strasse', 'str', 'rue', 'voie', 'calle', 'rua', 'via', 'straat', 'ulica'],
  housenumber: [
    'house number',
    'housenumber',
    'hausnummer',
    'hnr',
    'nr',
    'numero',
    'n',
    'no',
    'num',
    'huisnummer',
    'numer',
    'numero de porta',
  ],
  postcode: [
    'postcode',
    'post code',
    'postal code',
    'zip',
    'zip code',
    'zipcode',
    'plz',
    'postleitzahl',
    'code postal',
    'cp',
    'codigo postal',
    'cap',
    'postcode',
    'kod pocztowy',
    'postnummer',
  ],
  city: [
    'city',
    'town',
    'locality',
    'ort',
    'stadt',
    'gemeinde',
    'ville',
    'commune',
    'localite',
    'ciudad',
    'localidad',
    'poblacion',
    'cidade',
    'localidade',
    'citta',
    'comune',
    'plaats',
    'woonplaats',
    'stad',
    'miasto',
    'miejscowosc',
  ],
  country: ['country', 'country code', 'land', 'pays', 'pais', 'paese', 'kraj', 'nation'],
  phone: [
    'phone',
    'phone number',
    'telephone',
    'tel',
    'telefon',
    'telefonnummer',
    'telefono',
    'telefone',
    'telefoon',
    'mobile',
    'handy',
    'numero de telephone',
    'numero de telefone',
    'numero de telefono',
  ],
  website: [
    'website',
    'web',
    'url',
    'homepage',
    'site',
    'site web',
    'sitio web',
    'webseite',
    'internet',
    'domain',
    'domaine',
    'pagina web',
    'www',
  ],
  email: ['email', 'e mail', 'mail', 'email address', 'correo', 'correo electronico', 'courriel', 'adresse e mail'],
  lat: ['lat', 'latitude', 'breite', 'breitengrad', 'latitud', 'y'],
  lon: ['lon', 'lng', 'long', 'longitude', 'lange', 'laengengrad', 'langengrad', 'longitud', 'x'],
};

/** Folded header → field, for every header the dictionary knows. */
export class HeaderDictionary {
  private constructor(private readonly byHeader: ReadonlyMap<string, ListField>) {}

  /** The usual headers and the taxonomy's labels in every language it ships (reads them once: about a second). */
  static build(): HeaderDictionary {
    const byHeader = new Map<string, ListField>();
    for (const field of listFields) for (const h of usualHeaders[field]) if (!byHeader.has(foldText(h))) byHeader.set(foldText(h), field);
    for (const label of readFieldLabels()) {
      const key = foldText(label.text);
      if (key !== '' && !byHeader.has(key) && (listFields as readonly string[]).includes(label.field))
        byHeader.set(key, label.field as ListField);
    }
    return new HeaderDictionary(byHeader);
  }

  fieldOf(header: string): ListField | undefined {
    return this.byHeader.get(foldText(header));
  }

  /**
   * The mapping of a list's headers: `given` first (each named header must be in the list, or this throws
   * naming it), then each field not given takes the first header the dictionary knows for it.
   */
  guess(headers: readonly string[], given: ColumnMapping = {}): ColumnMapping {
    const mapping: ColumnMapping = { ...given };
    const taken = new Set(Object.values(given));
    for (const header of headers) {
      if (taken.has(header)) continue;
      const field = this.fieldOf(header);
      if (field && mapping[field] === undefined) {
        mapping[field] = header;
        taken.add(header);
      }
    }
    return mapping;
  }
}
