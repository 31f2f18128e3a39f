"""Android's shell and programs on the phone: mksh and toybox in a bubblewrap sandbox over the phone's tree,
and the Android programs (am, pm, settings, content, ...) that ask the phone process to run them."""
