"""What a phone holds: its settings and tasks, its file tree and storage, the apps' databases and the
content providers over them, its users and file owners, and its clock."""
