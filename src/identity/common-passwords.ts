import breached from '@zxcvbn-ts/language-common/src/passwords.json' with { type: 'json' };

/*
 * The passwords refused as too common (RELIABILITY.md A1d, ASVS 6.2.4, NIST SP 800-63B §5.1.1.2):
 * the 49,000 most frequent passwords of public breach corpora as zxcvbn-ts ships them (MIT; ordered
 * by frequency, from the Xato 10-million list), and a few of our own that such lists cannot know
 * (the product's name, recent years and seasons). Compared case-insensitively. Shipped inside the
 * program: nothing is fetched at run time.
 */
const OWN = [
  '87654321', '98765432', '09876543', '76543210',
  '00000000', '0987654321', '10203040', '11111111', '1111111111', '11223344', '1122334455', '12121212', '123123123',
  '123321123', '12341234', '12344321', '12345678', '123456789', '1234567890', '123456789a', '12345678a', '1234567a',
  '123456abc', '123456qwerty', '12345qwert', '1234abcd', '1234qwer', '123654789', '123abc123', '123qwe123',
  '123qweasd', '13131313', '147258369', '147852369', '159753456', '1a2b3c4d', '1q2w3e4r', '1q2w3e4r5t', '1q2w3e4r5t6y',
  '1qaz2wsx', '1qazxsw2', '22222222', '2wsx3edc', '33333333', '3edc4rfv', '44444444', '5201314520', '55555555',
  '66666666', '69696969', '741852963', '77777777', '789456123', '88888888', '963852741', '987654321', '987654321a',
  '99999999', 'a12345678', 'a1b2c3d4', 'aa123456', 'abc12345', 'abc123456', 'abcabc123', 'abcd1234', 'abcd12345',
  'abcdefgh', 'access123', 'access14', 'admin123', 'admin1234', 'adminadmin', 'administrator', 'administrator1',
  'andrew12', 'anthony1', 'apple123', 'arsenal1', 'asd123asd', 'asdf1234', 'asdfasdf', 'asdfghjk', 'asdfghjkl',
  'ashley12', 'autumn2025', 'babygirl1', 'baseball', 'baseball1', 'basketball', 'batman12', 'buster12', 'butterfly',
  'changeme', 'changeme1', 'charles1', 'charlie1', 'chelsea1', 'chocolate', 'computer', 'computer1', 'contact-ledger',
  'contactledger', 'contrasena', 'daniel12', 'default1', 'dragon12', 'dragon123', 'facebook1', 'ferrari1', 'football',
  'football1', 'fortnite1', 'freedom1', 'fuckyou1', 'ginger12', 'google123', 'guest123', 'hello123', 'hockey12',
  'hunter12', 'iloveu123', 'iloveyou', 'iloveyou!', 'iloveyou1', 'internet', 'internet1', 'jasmine1', 'jennifer',
  'jennifer1', 'jessica1', 'jordan23', 'joshua12', 'killer12', 'letmein!', 'letmein1', 'letmein123', 'linkedin1',
  'linkedin123', 'liverpool', 'logitech', 'lovelove', 'lovely12', 'loveyou1', 'manchester', 'master12', 'master123',
  'matthew1', 'mercedes', 'michael1', 'michelle', 'michelle1', 'microsoft', 'minecraft', 'minecraft1', 'monkey12',
  'monkey123', 'motdepasse', 'mustang1', 'naruto12', 'nicole12', 'nokia123', 'p@ssw0rd', 'p@ssword', 'pass1234',
  'pass12345', 'passw0rd', 'password', 'password!', 'password1', 'password123', 'password2024', 'password2025',
  'password2026', 'passwort', 'patrick1', 'pokemon1', 'pokemon123', 'porsche1', 'princess', 'princess1', 'q1w2e3r4',
  'q1w2e3r4t5', 'qazwsx12', 'qazwsx123', 'qazwsxedc', 'qwe123qwe', 'qwer1234', 'qwerty12', 'qwerty123', 'qwerty1234',
  'qwerty123456', 'qwertyqwerty', 'qwertyui', 'qwertyuiop', 'ranger12', 'richard1', 'robert12', 'roblox123',
  'root1234', 'samantha', 'samsung1', 'secret12', 'secret123', 'shadow12', 'shadow123', 'soccer12', 'spiderman',
  'spring2025', 'starwars', 'summer12', 'summer2024', 'summer2025', 'sunshine', 'sunshine1', 'superman', 'superman1',
  'test1234', 'test12345', 'testtest', 'thomas12', 'tigger12', 'trustno1', 'trustno11', 'user1234', 'welcome1',
  'welcome123', 'welcome2024', 'welcome2025', 'whatever', 'whatever1', 'william1', 'winter2024', 'winter2025',
  'woaini1314', 'xsw2zaq1', 'zaq12wsx', 'zaq1xsw2', 'zxc123zxc', 'zxcvbnm1', 'zxcvbnm123', 'zxcvbnmm',
];

let common: Set<string> | undefined;

/** True for a password on the list (any case). The list is read at the first check. */
export function isCommonPassword(password: string): boolean {
  // shorter ones never get here: the length rule refuses them first
  common ??= new Set([...breached, ...OWN].filter((p) => p.length >= 8).map((p) => p.toLowerCase()));
  return common.has(password.toLowerCase());
}

/** How many passwords the list holds (tests, docs). */
export function commonPasswordCount(): number {
  isCommonPassword('');
  return common!.size;
}
