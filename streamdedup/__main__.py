from streamdedup.cli import main

raise SystemExit(main())
