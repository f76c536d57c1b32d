package api

import "strings"

// Device types of spec 4.5 (filter `device`).
const (
	DeviceDesktop = "desktop"
	DeviceAndroid = "android"
	DeviceIOS     = "ios"
	DeviceMobile  = "mobile"
	DeviceOther   = "other"
)

// deviceType classifies a browser by its User-Agent. Order matters: iOS and
// Android UAs also say "Mobile", and mobile UAs often name a desktop OS
// ("Windows Phone", "Linux; Android"). iPadOS Safari presents itself as a
// Mac and is counted as desktop, as the browser asks.
func deviceType(ua string) string {
	switch {
	case ua == "":
		return DeviceOther
	case containsAny(ua, "iPhone", "iPad", "iPod"):
		return DeviceIOS
	case strings.Contains(ua, "Android"):
		return DeviceAndroid
	case containsAny(ua, "Mobile", "Mobi", "Opera Mini", "IEMobile", "BlackBerry", "KaiOS"):
		return DeviceMobile
	case containsAny(ua, "SMART-TV", "SmartTV", "Web0S", "CrKey", "Xbox", "PlayStation", "Nintendo"):
		return DeviceOther // televisions and consoles, which also name desktop systems
	case containsAny(ua, "Windows", "Macintosh", "X11", "Linux", "CrOS"):
		return DeviceDesktop
	}
	return DeviceOther
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
