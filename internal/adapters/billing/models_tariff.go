package billing

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the billing interface on tariff text: the name and description
// limits are recommendations, the benefits limits are rules.
const (
	MaxTariffNameLen        = 45  // recommended
	MaxTariffDescriptionLen = 300 // recommended
	MaxBenefitLen           = 35
	MaxBenefitsTotalLen     = 70
)

// serviceIDPlaceholder stands for ModelOptions.ServiceIDField in a prop.
const serviceIDPlaceholder = "\x00service_id"

var tariffProps = []prop{
	{name: "id", check: checkInteger},
	{name: serviceIDPlaceholder, check: checkInteger},
	{name: "name", check: recommendedMax(MaxTariffNameLen)},
	{name: "cost", check: checkString},
	{name: "period", check: checkString},
	{name: "description", nullable: true, check: recommendedMax(MaxTariffDescriptionLen)},
	{name: "channel_count", check: checkCount},
	{name: "banner", nullable: true, check: checkBanner},
	{name: "background_color", nullable: true, check: checkColor},
	{name: "benefits", nullable: true, check: checkBenefits},
}

// checkTariff checks a Tariff of the 2025-03-04 model.
func checkTariff(v *validator, path string, x any) {
	obj, ok := v.object(path, x)
	if !ok {
		return
	}
	v.props(path, obj, tariffProps)
	if _, ok := obj["prepaid"]; ok {
		v.warnf(path+".prepaid", "removed from the model on 2025-03-04; the applications ignore it")
	}
}

// recommendedMax checks a string whose length (in characters) should stay
// within limit.
func recommendedMax(limit int) check {
	return func(v *validator, path string, x any) {
		if s, ok := v.str(path, x); ok {
			if n := utf8.RuneCountInString(s); n > limit {
				v.warnf(path, "%d characters; up to %d recommended", n, limit)
			}
		}
	}
}

func checkCount(v *validator, path string, x any) {
	if n, ok := v.integer(path, x); ok && n < 0 {
		v.errorf(path, "must not be negative, got %d", n)
	}
}

func checkBanner(v *validator, path string, x any) {
	s, ok := v.str(path, x)
	if !ok {
		return
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.warnf(path, "%q is not an absolute http or https link to an image (1020 by 640 px)", s)
	}
}

// checkColor checks a card colour: #RGB, #RRGGBB or #RRGGBBAA, and not so
// light that the white text on the card is unreadable.
func checkColor(v *validator, path string, x any) {
	s, ok := v.str(path, x)
	if !ok {
		return
	}
	rgb, ok := parseHexColor(s)
	if !ok {
		v.warnf(path, "%q is not a hex colour (#RRGGBB); the applications may not understand it", s)
		return
	}
	// Rec. 709 luma of the sRGB values: a rough but stable brightness.
	luma := (0.2126*float64(rgb[0]) + 0.7152*float64(rgb[1]) + 0.0722*float64(rgb[2])) / 255
	if luma > 0.75 {
		v.warnf(path, "%q is very light; text on the card is always white", s)
	}
}

// parseHexColor parses #RGB, #RRGGBB or #RRGGBBAA into red, green, blue.
func parseHexColor(s string) ([3]uint8, bool) {
	var rgb [3]uint8
	hex, ok := strings.CutPrefix(s, "#")
	if !ok {
		return rgb, false
	}
	switch len(hex) {
	case 3:
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	case 6, 8:
	default:
		return rgb, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return rgb, false
	}
	if len(hex) == 8 {
		n >>= 8 // drop the alpha
	}
	return [3]uint8{uint8(n >> 16), uint8(n >> 8), uint8(n)}, true
}

// checkBenefits checks the list of benefits and its limits: each entry up
// to MaxBenefitLen characters, all together up to MaxBenefitsTotalLen.
func checkBenefits(v *validator, path string, x any) {
	entries, ok := x.([]any)
	if !ok {
		v.errorf(path, "must be an array of strings or null, got %s", kindOf(x))
		return
	}
	total := 0
	for i, e := range entries {
		at := path + "[" + strconv.Itoa(i) + "]"
		s, ok := e.(string)
		if !ok {
			v.errorf(at, "must be a string, got %s", kindOf(e))
			continue
		}
		n := utf8.RuneCountInString(s)
		total += n
		if n > MaxBenefitLen {
			v.errorf(at, "%d characters; at most %d", n, MaxBenefitLen)
		}
	}
	if total > MaxBenefitsTotalLen {
		v.errorf(path, "%d characters in all; at most %d together", total, MaxBenefitsTotalLen)
	}
}

// Tariff detail (GET /api/tariff/{id}): the tariff, its channels and the
// categories directory. The billing interface does not say which channel
// fields may be null, so null is accepted and a missing field is a warning.

var channelProps = []prop{
	{name: "name", nullable: true, check: checkString},
	{name: "logo_url", nullable: true, check: checkString},
	{name: "description", nullable: true, check: checkString},
	{name: "number", nullable: true, check: checkInteger},
	{name: "categories", nullable: true, check: arrayOf(checkInteger)},
}

func checkTariffDetail(v *validator, path string, x any) {
	obj, ok := v.object(path, x)
	if !ok {
		return
	}
	v.props(path, obj, []prop{
		{name: "tariff", check: checkTariff},
		{name: "channels", check: arrayOf(objectOf(channelProps))},
		{name: "categories", check: checkDirectory},
	})
	dir, _ := obj["categories"].(map[string]any)
	if dir == nil {
		return
	}
	for i, ch := range list(obj["channels"]) {
		for k, id := range list(field(ch, "categories")) {
			if _, ok := dir[stringOf(id)]; !ok && id != nil {
				v.warnf(path+".channels["+strconv.Itoa(i)+"].categories["+strconv.Itoa(k)+"]",
					"category %s is not in the categories directory", stringOf(id))
			}
		}
	}
}

// checkDirectory checks the categories directory: an object whose keys are
// category ids and whose values are names.
func checkDirectory(v *validator, path string, x any) {
	dir, ok := v.object(path, x)
	if !ok {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(dir)) {
		name := dir[key]
		at := path + "[" + strconv.Quote(key) + "]"
		if _, ok := parseID(key); !ok {
			v.errorf(at, "key must be a category id (an integer), got %q", key)
		}
		if _, ok := name.(string); !ok {
			v.errorf(at, "must be a category name (a string), got %s", kindOf(name))
		}
	}
}

func stringOf(x any) string {
	if s, ok := x.(interface{ String() string }); ok {
		return s.String()
	}
	return kindOf(x)
}
