"""Development tools that are not the service: `make run` and the test suite use them from the
checkout (bin/run-dev, bin/with-test-services, config/settings/dev.py); the wheel and the image
do not need them."""
