//! Named keys of `terminal_send` and the bytes a terminal receives for them.

/// The key names `terminal_send` accepts in `keys`, in the order the error message lists
/// them. `ctrl-a` … `ctrl-z` are accepted too (bytes 0x01 … 0x1a).
pub const KEY_NAMES: &[&str] = &[
    "enter",
    "tab",
    "backspace",
    "escape",
    "space",
    "up",
    "down",
    "right",
    "left",
    "home",
    "end",
    "page-up",
    "page-down",
    "delete",
    "ctrl-a … ctrl-z",
    "ctrl-\\",
];

/// The bytes sent for key `name` (case-insensitive): `enter` is `\r` (the terminal turns it
/// into a line end, as a keyboard's Enter does), `ctrl-c` is 0x03 (the terminal sends
/// SIGINT to its foreground process group), cursor keys are the VT100 sequences
/// (`up` = `ESC [ A`). `None` for an unknown name.
pub fn key_bytes(name: &str) -> Option<&'static [u8]> {
    let name = name.to_ascii_lowercase();
    let bytes: &'static [u8] = match name.as_str() {
        "enter" | "return" => b"\r",
        "tab" => b"\t",
        "backspace" => b"\x7f",
        "escape" | "esc" => b"\x1b",
        "space" => b" ",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "home" => b"\x1b[H",
        "end" => b"\x1b[F",
        "page-up" => b"\x1b[5~",
        "page-down" => b"\x1b[6~",
        "delete" => b"\x1b[3~",
        "ctrl-\\" => b"\x1c",
        other => return ctrl_letter(other),
    };
    Some(bytes)
}

/// `ctrl-<letter>` as its control byte.
fn ctrl_letter(name: &str) -> Option<&'static [u8]> {
    const CONTROL: &[u8; 26] = b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a";
    let letter = name.strip_prefix("ctrl-")?;
    let [byte] = letter.as_bytes() else {
        return None;
    };
    if !byte.is_ascii_lowercase() {
        return None;
    }
    let index = usize::from(byte - b'a');
    CONTROL.get(index..=index)
}

/// The error for an unknown key name (exact): `unknown key "<name>"; expected one of enter,
/// tab, …, ctrl-a … ctrl-z, ctrl-\`.
pub fn unknown_key(name: &str) -> String {
    format!(
        "unknown key {}; expected one of {}",
        serde_json::Value::from(name),
        KEY_NAMES.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn names_map_to_their_bytes() {
        assert_eq!(key_bytes("enter"), Some(&b"\r"[..]));
        assert_eq!(key_bytes("Ctrl-C"), Some(&b"\x03"[..]));
        assert_eq!(key_bytes("ctrl-z"), Some(&b"\x1a"[..]));
        assert_eq!(key_bytes("up"), Some(&b"\x1b[A"[..]));
        assert_eq!(key_bytes("ctrl-1"), None);
        assert_eq!(key_bytes("ctrl-"), None);
        assert_eq!(key_bytes("f13"), None);
    }

    #[test]
    fn an_unknown_key_names_the_accepted_ones() {
        assert_eq!(
            unknown_key("f13"),
            "unknown key \"f13\"; expected one of enter, tab, backspace, escape, space, up, \
             down, right, left, home, end, page-up, page-down, delete, ctrl-a … ctrl-z, ctrl-\\"
        );
    }
}
