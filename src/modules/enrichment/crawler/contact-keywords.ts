/**
 * The words by which a site's links name the pages that carry its contact details, in the languages the
 * taxonomy (@openstreetmap/id-tagging-schema) ships translations for, the major ones first. A link's text,
 * title or URL path that starts a word with one of them (or contains it, for scripts written without
 * spaces) makes the page a candidate; the kind decides which candidates are fetched first. Words are
 * matched after `foldText` on both sides, so accents and case do not matter (`Über uns` = `uber uns`).
 */
export type ContactPageKind = 'contact' | 'legal' | 'about' | 'team';

export const contactPageWeights: Record<ContactPageKind, number> = { contact: 4, legal: 3, about: 2, team: 1 };

export const contactKeywords: Record<ContactPageKind, string[]> = {
  contact: [
    // en, de, fr, it, es, pt, nl, sv/da/no, fi, pl, cs/sk, hu, ro, hr/sr/bs/sl, bg/ru/uk/mk/sr-Cyrl, el, tr
    'contact', 'contacts', 'get in touch', 'reach us', 'kontakt', 'kontaktformular', 'ansprechpartner', 'anfahrt',
    'nous contacter', 'contactez', 'contatti', 'contatto', 'contattaci', 'contacto', 'contactos', 'contactanos', 'contactenos',
    'contato', 'contatos', 'fale conosco', 'contacte', 'contacteer', 'neem contact', 'kontakta oss', 'kontakt oss', 'kontakt os',
    'yhteystiedot', 'ota yhteytta', 'yhteys', 'kontaktujte', 'kontaktirajte', 'kapcsolat', 'elerhetoseg', 'contacteaza',
    'kontakti', 'kontaktai', 'kontakts', 'kontaktid', 'kontaktoni', 'контакты', 'контакти', 'контакт', 'связаться', 'обратная связь',
    'επικοινωνια', 'iletisim', 'bize ulasin',
    // eu, ca, gl, ast, cy, ga, is, mt, lb, fy, af, sq, et, lv, lt
    'harremanetan', 'harremana', 'contacta', 'contactu', 'cysylltu', 'teagmhail', 'hafa samband', 'hafdu samband', 'kuntatt', 'kontaktéiert',
    'kontaktieren', 'kontak', 'kontakteer', 'na kontakt', 'sazinies', 'susisiekite',
    // ja, ko, zh
    'お問い合わせ', 'お問合せ', '問い合わせ', '問合せ', 'お問い合せ', '連絡先', 'コンタクト', '연락처', '문의', '오시는 길', '联系我们', '联系方式', '聯絡我們', '聯繫我們', '联络我们', '聯絡',
    // ar, fa, ur, he, hi/mr/ne, bn, ta, te, kn, ml, gu, pa, th, vi, id/ms, fil, sw, ka, hy, mn, km, my, lo, kk, uz, az
    'اتصل بنا', 'تواصل معنا', 'اتصال', 'تماس با ما', 'ارتباط با ما', 'رابطہ', 'צור קשר', 'יצירת קשר', 'संपर्क', 'যোগাযোগ',
    'தொடர்பு', 'సంప్రదించండి', 'ಸಂಪರ್ಕ', 'ബന്ധപ്പെടുക', 'સંપર્ક', 'ਸੰਪਰਕ', 'ติดต่อ', 'lien he', 'hubungi kami', 'hubungi', 'makipag ugnayan',
    'wasiliana', 'კონტაქტი', 'კონტაქტები', 'կապ', 'холбоо барих', 'ទំនាក់ទំនង', 'ဆက်သွယ်ရန်', 'ຕິດຕໍ່', 'байланыс', 'aloqa', 'bog lanish', 'əlaqə',
  ],
  legal: [
    'impressum', 'imprint', 'legal notice', 'legal information', 'site notice', 'offenlegung', 'anbieterkennzeichnung',
    'mentions legales', 'informations legales', 'aviso legal', 'nota legal', 'nota legale', 'note legali', 'informazioni legali',
    'informacion legal', 'informacao legal', 'colofon', 'colophon', 'kolofon', 'juridisk information', 'juridische informatie',
    'nota prawna', 'dane firmy', 'pravni informace', 'impresszum', 'kunye', 'yasal uyari', 'реквизиты', 'правовая информация',
    'νομικη σημειωση', '特定商取引法', '法的表記', '사업자정보', '法律声明', 'المعلومات القانونية', 'הצהרה משפטית',
  ],
  about: [
    'about', 'about us', 'uber uns', 'wir uber uns', 'a propos', 'qui sommes nous', 'chi siamo', 'sobre nosotros', 'quienes somos',
    'sobre nos', 'quem somos', 'over ons', 'om oss', 'om os', 'tietoa meista', 'o nas', 'o nama', 'rolunk', 'despre noi',
    'о нас', 'о компании', 'про нас', 'σχετικα με εμας', 'hakkimizda', 'apie mus', 'par mums', 'qui som', 'quant a nosaltres',
    'amdanom ni', '会社概要', '会社案内', '私たちについて', '회사소개', '关于我们', '關於我們', 'من نحن', 'درباره ما', 'אודות',
    'हमारे बारे में', 've chung toi', 'gioi thieu', 'เกี่ยวกับเรา', 'tentang kami',
  ],
  team: [
    'team', 'our team', 'unser team', 'mitarbeiter', 'equipe', 'equipo', 'squadra', 'tiimi', 'zespol', 'medewerkers', 'staff',
    'команда', 'наша команда', 'ομαδα', 'ekibimiz', 'チーム', 'スタッフ', '팀', '团队', '團隊', 'الفريق', 'הצוות',
  ],
};
