package filter

import (
	"slices"
	"strings"
)

// languageCodes maps ISO 639-1 and 639-2/3 codes to the language names that
// WildChat's "language" field uses. Names not listed here still work: they are
// compared as written, ignoring case.
var languageCodes = map[string]string{
	"en": "English", "eng": "English",
	"zh": "Chinese", "zho": "Chinese", "chi": "Chinese",
	"ru": "Russian", "rus": "Russian",
	"fr": "French", "fra": "French", "fre": "French",
	"es": "Spanish", "spa": "Spanish",
	"pt": "Portuguese", "por": "Portuguese",
	"de": "German", "deu": "German", "ger": "German",
	"it": "Italian", "ita": "Italian",
	"ja": "Japanese", "jpn": "Japanese",
	"ko": "Korean", "kor": "Korean",
	"ar": "Arabic", "ara": "Arabic",
	"tr": "Turkish", "tur": "Turkish",
	"vi": "Vietnamese", "vie": "Vietnamese",
	"pl": "Polish", "pol": "Polish",
	"id": "Indonesian", "ind": "Indonesian",
	"nl": "Dutch", "nld": "Dutch", "dut": "Dutch",
	"fa": "Persian", "fas": "Persian", "per": "Persian",
	"uk": "Ukrainian", "ukr": "Ukrainian",
	"hi": "Hindi", "hin": "Hindi",
	"sv": "Swedish", "swe": "Swedish",
	"cs": "Czech", "ces": "Czech", "cze": "Czech",
	"el": "Greek", "ell": "Greek", "gre": "Greek",
	"he": "Hebrew", "heb": "Hebrew",
	"th": "Thai", "tha": "Thai",
	"ro": "Romanian", "ron": "Romanian", "rum": "Romanian",
	"hu": "Hungarian", "hun": "Hungarian",
}

// baseTag strips a region or script suffix: "en-US" and "zh_Hans" give "en"
// and "zh".
func baseTag(s string) string {
	if i := strings.IndexAny(s, "-_"); i > 0 {
		return s[:i]
	}
	return s
}

// languageName returns the canonical name for a name or code given in
// Options.Languages: a known code maps to its name, anything else is kept.
func languageName(s string) string {
	s = strings.TrimSpace(s)
	if name, ok := languageCodes[strings.ToLower(baseTag(s))]; ok {
		return name
	}
	return s
}

// spellings returns every way a record may write the language name: the name
// and each code that maps to it. A record's field is compared against these
// with strings.EqualFold, so matching allocates nothing.
func spellings(name string) []string {
	out := []string{name}
	for code, n := range languageCodes {
		if strings.EqualFold(n, name) {
			out = append(out, code)
		}
	}
	slices.Sort(out[1:]) // map order varies; keep the list stable
	return out
}
