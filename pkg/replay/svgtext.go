package replay

import "unicode/utf8"

// The chart is laid out without a font engine: an SVG names a generic
// "sans-serif" and the viewer picks the face, so the widths below are an
// upper bound rather than one font's metrics. They are Helvetica's (Adobe's
// AFM, thousandths of an em; Arial has the same advances) scaled by
// sansWidthMargin, because the sans-serif of most Linux desktops and of
// GitHub's renderer on Linux, DejaVu Sans, is up to 14% wider. A label laid
// out with these widths therefore does not reach its neighbour in any of them.
const sansWidthMargin = 1.15

// helveticaWidths holds the advance of the printable ASCII characters from
// ' ' (32) to '~' (126), in thousandths of an em.
var helveticaWidths = [95]int{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // ' ' to '/'
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, // '0' to '9'
	278, 278, 584, 584, 584, 556, 1015, // ':' to '@'
	667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, // 'A' to 'M'
	722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, // 'N' to 'Z'
	278, 278, 278, 469, 556, 333, // '[' to '`'
	556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, // 'a' to 'm'
	556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, // 'n' to 'z'
	334, 260, 334, 584, // '{' to '~'
}

// wideRune is the advance assumed for any other character: a full em, the
// width of CJK ideographs and wider than any Latin letter.
const wideRune = 1000

// Vertical extent of a line of text around its baseline, in ems: DejaVu
// Sans's ascender (0.76) and descender (0.24), the larger of the usual faces.
const (
	textAscent  = 0.76
	textDescent = 0.24
)

// textWidth is the upper bound of the width of s at the font size, in px.
func textWidth(s string, size float64) float64 {
	total := 0
	for _, r := range s {
		if r >= ' ' && r <= '~' {
			total += helveticaWidths[r-' ']
		} else {
			total += wideRune
		}
	}
	return float64(total) / 1000 * size * sansWidthMargin
}

// fitText shortens s with an ellipsis until it is at most width px wide.
func fitText(s string, size, width float64) string {
	if textWidth(s, size) <= width {
		return s
	}
	for len(s) > 0 {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
		if textWidth(s+"…", size) <= width {
			return s + "…"
		}
	}
	return ""
}
